#pragma once
/// \file
/// The performance model: what one training step of a planned run (RunPlan) costs one rank, per
/// layer and per phase, and how long it takes on a Machine.
///
/// Counted exactly from the plan (the same arithmetic the layers, halos and reducer use):
///   - FLOPs per rank per step (layers/LayerFlops.hpp's counting: forward, backward-data where
///     the layer propagates, backward-weights), and an estimate of the memory traffic;
///   - per halo exchange: bytes this rank sends and to how many neighbours (comm/HaloPlan's
///     boxes), a forward gather and a backward scatter-add per windowed layer -- except the
///     first convolution, whose input ghosts the reader fills and whose input has no gradient;
///   - bytes handed to the gradient reduction (ModelPlan::gradients, as GradientReducer sums
///     them: the replicated parameters over the world, the first dense layer's own columns over
///     the ranks holding the same columns: the data-parallel groups, and on a layer grid its
///     sub-grids), and the number of reductions;
///   - per redistribution between layer grids (a "Redistribute" layer of the plan, and the
///     segmentation labels moved to the output's grid): bytes this rank sends to other ranks
///     forward and in the adjoint (comm/RedistributePlan's blocks, as Redistribute sends them),
///     from and to how many ranks, and the memory packing, unpacking and the local copy touch;
///   - bytes this rank reads from sample files per step (its ghosted subvolume of each sample);
///   - with recomputation (ModelPlan::recomputeSegments, model/Recompute.hpp): each recomputed
///     layer's forward once more (its FLOPs, and its share 1/passes of the layer's time), and the
///     gather of a layer whose windowed input is a recomputed output exchanged once more where
///     the ghosts are read again: by the layer's forward run again, or by a convolution's
///     backward-weights (a segment ending at a convolution); a recomputed input holds its owned
///     cells only. A segment's first layer reads the kept segment input, whose ghosts still hold
///     what the first forward gathered: no second gather (Graph::recomputeNode's rule); a
///     pool's backward reads no ghosts. The recomputation runs right before the segment's last
///     layer's backward (stepSchedule), so it delays the reductions behind it.
/// Each layer is counted where the rank sits on that layer's grid (ModelPlan::place): its
/// samples there, its box, its sub-grid's halo; a rank holding no sample of a layer (a shadow,
/// or a sub-grid left without one) computes and exchanges nothing in it, yet joins its
/// collectives (batch-norm statistics, gradient reductions, redistributions).
/// Predicted from a Machine:
///   - compute: a calibrated layer timing where one matches the layer's key (Machine.hpp), else
///     FLOPs at the convolution efficiency of peak plus traffic at the memory efficiency of its
///     bandwidth, plus a fixed overhead per layer pass;
///   - halo: per exchange, latency per neighbour + bytes / bandwidth, plus packing and
///     unpacking at memory bandwidth, counted in whole cache lines per contiguous row (a face
///     across W costs a line per value);
///   - allreduce: alpha-beta, ring 2(p-1) alpha + 2 (p-1)/p n / beta or recursive halving
///     2 log2(p) alpha + 2 (p-1)/p n / beta, or recursive doubling log2(p) (alpha + n / beta)
///     where that is faster (short messages), per reduction; a layer's reductions start when its
///     backward pass ends (GradientReducer) and run one after another, so only what outlasts
///     the rest of the backward pass is exposed -- on a machine whose reductions overlap
///     (Network::reductionsOverlap; on a CPU rank its own core does them: all exposed);
///   - redistribution: per direction, latency per peer + the larger of the bytes sent and
///     received / bandwidth (the group's link, as the halo's) + the memory touched at memory
///     bandwidth; its own phase, exposed (the trainer books it apart from compute);
///   - I/O: bytes / read bandwidth (the lesser of the rank's and its share of the aggregate);
///     with prefetch only what the step's other phases do not hide is left exposed; none after
///     the first epoch where the rank's subvolumes of its group's share of the training set fit
///     its cache (Data/cache MiB).
/// In the run's precision (RunPlan::precision): activation values (halos, redistributions, the
/// memory-bound layers' traffic, activation memory) take activationBytes of it, 2 for bfloat16 and
/// half; parameters, their gradients, the gradient reduction and the optimizer stay float
/// (parameterBytes); FLOPs go at the machine's rate for the precision (peakGflops: a 16-bit rate
/// where the machine file gives one, else the float rate); a calibrated timing's key names it.
/// A rank pair inside a node uses the intra-node figures; a communicator spanning more ranks
/// than a node holds, the inter-node ones (ranks are numbered node by node, spatial groups
/// first: ProcessGrid's order).

#include <cstddef>
#include <string>
#include <vector>

#include <hybrid3d/plan/Machine.hpp>
#include <hybrid3d/plan/RunPlan.hpp>

namespace hybrid3d {

/// One halo exchange of one rank: what it sends and to how many ranks.
struct HaloTraffic {
  std::size_t bytes = 0;
  int neighbours = 0;
  /// Memory the packing (or unpacking) touches: whole 64-byte lines of each contiguous run of
  /// the boxes (a row along W of one channel and sample), so a face across W, one voxel per
  /// row, costs a line per value.
  std::size_t packedBytes = 0;
};

/// One redistribution of one rank in one direction (comm/Redistribute.hpp).
struct RedistributeTraffic {
  std::size_t bytes = 0;  // sent to other ranks (what PhaseTimers::redistributeBytes counts)
  std::size_t receivedBytes = 0;  // from other ranks
  int peers = 0;                  // the more of the ranks it sends to and receives from
  /// Memory touched: packing reads whole 64-byte lines of each row of the boxes sent and writes
  /// the buffer, unpacking reads the buffer and writes the lines of the boxes received, the local
  /// copy reads and writes the lines of the boxes the rank keeps.
  std::size_t touchedBytes = 0;
};

struct LayerCost {
  std::string name, kind;
  std::string key;      // layerKey(): what a calibrated timing is looked up by
  double work = 0;      // the timing's size: batch per group x owned output voxels
  GraphMemory memory;   // what the rank holds for it (model/ModelPlan's predictLayerMemory)
  double flops = 0;     // per step
  double bytes = 0;     // memory traffic per step (estimate)
  int passes = 0;       // kernel passes per step (forward, backward)
  HaloTraffic gather;   // forward (zero: no exchange)
  HaloTraffic scatter;  // backward
  /// A Redistribute layer: forward, and the adjoint in backward (none into the model input).
  RedistributeTraffic forward, adjoint;
  int localBatch = 0;  // the samples the rank holds of this layer (on its grid)
  double computeSeconds = 0, haloSeconds = 0, redistributeSeconds = 0;
  double backwardSeconds = 0;  // the backward passes and the scatter-add (overlap model)
  bool calibrated = false;     // computeSeconds from a measured timing
  double forwardFlops = 0;     // of the forward pass alone
  /// Recomputation: the layer's forward runs again in the backward pass (FLOPs per step
  /// recomputeFlops, not in `flops`), and/or its input's gather is exchanged again (`regather`:
  /// its input is a recomputed output); recomputeSeconds: both, included in computeSeconds and
  /// haloSeconds.
  bool recomputed = false;
  double recomputeFlops = 0;
  HaloTraffic regather;
  double recomputeSeconds = 0;
};

/// Exposed seconds per step by phase, as the trainer's progress line and metrics.csv split it.
struct PhaseSeconds {
  double compute = 0, halo = 0, allreduce = 0, io = 0, redistribute = 0;
  double step() const { return compute + halo + allreduce + io + redistribute; }
};

struct StepCost {
  Int3 coords{0, 0, 0};           // the spatial rank costed
  std::vector<LayerCost> layers;  // the model's, in its order
  /// What the step does besides the layers, costed like them (a key, a work, a calibrated
  /// timing or an estimate): the preprocessing of the batch's input into the model's input
  /// (log1p, scaling, ghost zeroing; work = batch x ghosted input voxels), and the update
  /// (zeroing gradients, the loss, waiting for the reductions, the optimizer; work = this
  /// rank's parameter values).
  LayerCost input, update;
  /// The segmentation labels moved from the input's grid to the output's as the batch is loaded
  /// (kind "Redistribute", int values; no traffic where the output is on the input's grid).
  LayerCost labels;
  /// The recomputed segments (ModelPlan::recomputeSegments; none without recomputation).
  std::vector<RecomputeSegment> recompute;
  std::size_t haloBytes = 0;          // sent per step, gathers and scatter-adds, repeated ones too
  std::size_t allreduceBytes = 0;     // handed to the gradient reduction per step
  std::size_t redistributeBytes = 0;  // sent to other ranks by redistributions per step, both
                                      // directions, the labels' included
  int reductions = 0;                 // gradients reduced (one allreduce each)
  double allreduceSeconds = 0;        // reducing them, before the backward pass hides any
  std::size_t ioBytes = 0;            // read from sample files per step (the first epoch's)
  bool cached = false;                // the rank's share of the training set fits its cache:
                                      // after the first epoch nothing is read
  double ioSeconds = 0;               // reading per step, before prefetch hides any
  std::size_t memoryBytes = 0;        // RankMemory's total but cache and checkpoint
  PhaseSeconds phases;                // exposed per step
  double samplesPerSecond = 0;        // global mini-batch / step
};

/// How the sample files store their values (prefetch and cache are the run's: RunPlan).
struct IoModel {
  int fileScalarBytes = 2;  // int16 counts (CosmoFlow files); float32 volumes: 4
  int labelBytes = 1;       // uint8 segmentation labels
};

/// What the rank at `coords` holds per layer (model/ModelPlan.hpp's predictLayerMemory), and in
/// all (predictMemory), in precision `p` (16-bit: activations at 2 bytes a value, float master
/// weights and their gradients).
std::vector<GraphMemory> predictLayerMemoryIn(Precision p, const ModelPlan& m, const Int3& coords);
GraphMemory predictMemoryIn(Precision p, const ModelPlan& m, const Int3& coords);

/// Bytes of the optimizer's state on the rank at `coords`, and with StateSharding::Gradients of
/// the buffers the reduce-scatter leaves its parts of the gradient sums in: for the whole of
/// each parameter it holds, or sharded its part over the ranks summing the gradient (the
/// largest rank's: train/ReplicatedStateShards.hpp). Part of StepCost::memoryBytes.
std::size_t replicatedStateBytes(const RunPlan& run, const Int3& coords);

/// The key a layer's calibrated timing is stored under: kind, channels, window, the convolution
/// engine the layer would run on this rank, precision; e.g. "Conv3d 4>16 k3 s1 onednn float".
std::string layerKey(const RunPlan& run, int layer, const Int3& coords);

/// What the rank at `coords` sends and receives in Redistribute layer `id` of `run` per step:
/// forward, or the adjoint of backward (nothing where the layer reads the model input: no
/// gradient flows into the data). countStep's count; `hybrid3d check` sums it over a group.
RedistributeTraffic redistributionTraffic(const RunPlan& run, int id, const Int3& coords,
                                          bool adjoint);

/// The sample files' element types as the generators write them (real CosmoFlow data are int16
/// counts too; the U-Net's volumes float32).
IoModel ioModelFor(const TrainConfig& config);

/// Counts (no machine): every layer's FLOPs, memory, traffic, halo exchanges, keys and work on the
/// rank at `coords` of `run`'s spatial grid, plus the reduction and read volumes.
StepCost countStep(const RunPlan& run, const Int3& coords, const IoModel& io = {});

/// countStep, then times from `machine`.
StepCost predictStep(const RunPlan& run, const Machine& machine, const Int3& coords,
                     const IoModel& io = {});

/// The spatial rank whose step is slowest on `machine` (the step waits for it), predicted among
/// three: the first (the largest box: block decomposition gives the remainder to the first
/// ranks), the central one (the most neighbours) and the last (the smallest box, yet the
/// most ghosts where a strided window overhangs its low side).
StepCost predictSlowestRank(const RunPlan& run, const Machine& machine, const IoModel& io = {});

}  // namespace hybrid3d
