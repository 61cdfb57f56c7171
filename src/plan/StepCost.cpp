#include <algorithm>
#include <cmath>

#include <hybrid3d/comm/HaloPlan.hpp>
#include <hybrid3d/comm/ShardRange.hpp>
#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/Subvolume.hpp>
#include <hybrid3d/layers/LayerFlops.hpp>
#include <hybrid3d/model/Recompute.hpp>
#include <hybrid3d/train/RunChecks.hpp>
#include <hybrid3d/plan/RankMemory.hpp>
#include <hybrid3d/plan/StepCost.hpp>

#include "impl/RankShare.hpp"
#include "impl/Traffic.hpp"

namespace hybrid3d {

namespace {

// Bytes of one activation value in the run's precision (2 for bfloat16 and half: activations,
// their gradients, halos, redistributions and the memory-bound layers' traffic), and of one value
// of what stays float in a 16-bit run (core/Precision.hpp): parameters, their gradients and the
// gradient reduction, the optimizer's state, the sums reduced across ranks.
double valueBytes(const RunPlan& r) { return double(activationBytes(r.precision)); }
double floatBytes(const RunPlan& r) { return double(parameterBytes(r.precision)); }

Index channelsTimesVoxels(const TensorShape& s) {
  return Index(s.channels) * s.extents[0] * s.extents[1] * s.extents[2];
}

// The layer's input reaches it from the model input: the reader fills its ghosts (Trainer
// sets setInputGhostsFilled) and no gradient flows back into the data.
bool readsModelInput(const LayerPlan& l) { return l.inputs.at(0) == ModelPlan::Input; }

// The engine a convolution runs on the rank owning `outOwned` output voxels, as Conv3d picks it.
std::string convEngineName(const RunPlan& r, int id, const Int3& coords, Index outOwned) {
  const LayerPlan& l = r.model.layers.at(id);
  const Index largest = r.model.convLargestOperand(id, coords);
  return toString(withPrecision(r.precision, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return resolveConvEngine<T, DefaultMemorySpace>(l.conv.engine, l.name, outOwned, largest);
  }));
}

// Memory traffic of one step of a layer without a calibrated timing, in tensor elements
// (forward reads and writes, backward the same again and the saved input or output).
double trafficElements(const LayerPlan& l, double in, double out, bool dataGradient) {
  if (l.kind == "Conv3d" || l.kind == "ConvTranspose3d")
    return (in + out) + (dataGradient ? in + out : 0) + (in + out);  // fwd, bwd-data, bwd-weights
  if (l.kind == "BatchNorm3d") return 3 * in + 4 * in;  // statistics, normalise; two backward
  if (l.kind == "FlattenDense" || l.kind == "Dense") return 3 * in;
  return 2 * (in + out) + (dataGradient ? in + out : 0);  // element-wise, pools, concat
}

// The segmentation task reads each rank's labels on the input's grid and moves them to the
// output's where the two differ (model/tasks/Segmentation.cpp): int values, forward only.
LayerCost labelMove(const RunPlan& r, const Int3& coords) {
  const ModelPlan& m = r.model;
  LayerCost lc;
  lc.name = "labels";
  lc.kind = "Redistribute";
  const int last = int(m.layers.size()) - 1;
  if (last < 0 || !m.layers[last].volume || sampleSpec(m.traits, m.input.extents).labels.empty())
    return lc;
  const LayerLayout from = m.layout(ModelPlan::Input), to = m.layout(last);
  if (from == to) return lc;
  const LayerPlan& out = m.layers[last];
  const int rank = from.positionOf(coords);
  const RedistributePlan plan =
      planRedistribute(from, to, out.output.extents, out.output.batch, rank, false);
  lc.forward = Impl::redistributeTraffic(plan, 1, true, sizeof(int));
  lc.key = "Redistribute labels int";
  return lc;
}

}  // namespace

std::vector<GraphMemory> predictLayerMemoryIn(Precision p, const ModelPlan& m, const Int3& coords) {
  return withPrecision(p, [&](auto tag) {
    return predictLayerMemory<typename decltype(tag)::type, DefaultMemorySpace>(m, coords);
  });
}

GraphMemory predictMemoryIn(Precision p, const ModelPlan& m, const Int3& coords) {
  return withPrecision(p, [&](auto tag) {
    return predictMemory<typename decltype(tag)::type, DefaultMemorySpace>(m, coords);
  });
}

RedistributeTraffic redistributionTraffic(const RunPlan& r, int id, const Int3& coords,
                                          bool adjoint) {
  const LayerPlan& l = r.model.layers.at(id);
  if (adjoint && readsModelInput(l)) return {};  // no gradient flows into the data
  return Impl::redistributeTraffic(r.model.redistribution(id, coords, adjoint), l.output.channels,
                                   l.volume, activationBytes(r.precision));
}

std::string layerKey(const RunPlan& r, int id, const Int3& coords) {
  const LayerPlan& l = r.model.layers.at(id);
  const TensorShape& x = r.model.shape(l.inputs.at(0));
  std::string key = l.kind + " ";
  if (l.kind == "Conv3d" || l.kind == "ConvTranspose3d") {
    const Index owned = BlockDecomposition(l.output.extents, l.grid)
                            .ownedBox(r.model.place(id, coords).coords)
                            .size();
    key += std::to_string(x.channels) + ">" + std::to_string(l.output.channels);
    if (l.kind == "Conv3d")
      key += " k" + std::to_string(l.conv.kernel) + " s" + std::to_string(l.conv.stride) + " " +
             convEngineName(r, id, coords, owned);
    if (readsModelInput(l)) key += " first";
  } else if (l.kind == "Concat") {
    key +=
        std::to_string(x.channels) + "+" + std::to_string(r.model.shape(l.inputs.at(1)).channels);
  } else if (l.kind == "FlattenDense" || l.kind == "Dense") {
    key += ">" + std::to_string(l.output.channels);
  } else {
    key += "c" + std::to_string(l.output.channels);
  }
  return key + " " + toString(r.precision);
}

namespace Impl {

data::Subvolume inputSubvolume(const RunPlan& r, const Int3& coords) {
  const ModelPlan& m = r.model;
  return data::Subvolume(BlockDecomposition(m.input.extents, r.grid), coords,
                         m.outputGhosts(ModelPlan::Input).at(coords));
}

Index localParameters(const ModelPlan& m, const Int3& coords) {
  Index local = 0;
  for (int id = 0; id < int(m.layers.size()); ++id) local += m.localParameters(id, coords);
  return local;
}

// The parameter values the rank updates and holds optimizer state for: all it holds, or with
// state sharded its part of each tensor over the ranks summing its gradient (the largest part,
// a first rank's: comm/ShardRange.hpp). `reducedOnly`: of the tensors summed over more than one
// rank only (those whose sums a reduce-scatter leaves in buffers of their own).
Index updatedParameters(const RunPlan& r, const Int3& coords, bool reducedOnly) {
  if (r.stateSharding == StateSharding::None && !reducedOnly)
    return localParameters(r.model, coords);
  Index n = 0;
  for (int id = 0; id < int(r.model.layers.size()); ++id)
    for (const PlannedGradient& g : r.model.gradients(id, coords, r.groups))
      if (!reducedOnly || g.ranks > 1)
        n += Index(shardRange(std::size_t(g.values), 0, g.ranks).count);
  return n;
}

}  // namespace Impl

namespace {

using Impl::inputSubvolume;
using Impl::localParameters;
using Impl::updatedParameters;

// A layer's arithmetic on the rank: FLOPs, kernel passes, its work (a calibrated timing's size)
// and memory traffic, over the `lc.localBatch` samples it holds.
void countArithmetic(LayerCost& lc, const ModelPlan& m, const LayerPlan& l, double ownedIn,
                     double ownedOut, bool dataGradient, double scalar) {
  const TensorShape& x = m.shape(l.inputs.at(0));
  const double batch = lc.localBatch;
  double inElements = 0;
  for (int in : l.inputs) inElements += batch * m.shape(in).channels * ownedIn;
  const double outElements = batch * l.output.channels * ownedOut;
  lc.passes = lc.localBatch > 0 ? 2 : 0;  // a rank without samples runs nothing
  if (l.kind == "Conv3d") {
    const double k3 = double(l.conv.kernel) * l.conv.kernel * l.conv.kernel;
    const LayerFlops f =
        convolutionFlops(outElements * x.channels * k3, l.conv.bias ? outElements : 0);
    lc.flops = f.step(dataGradient);
    lc.forwardFlops = f.forward;
    if (lc.localBatch > 0) lc.passes = dataGradient ? 3 : 2;
  } else if (l.kind == "ConvTranspose3d") {
    const LayerFlops f = convolutionFlops(outElements * x.channels, 0);
    lc.flops = f.step(dataGradient);
    lc.forwardFlops = f.forward;
    if (lc.localBatch > 0) lc.passes = dataGradient ? 3 : 2;
  } else if (l.kind == "FlattenDense") {
    const double features = double(x.channels) * ownedIn;  // this rank's columns
    lc.forwardFlops = 2 * batch * features * l.output.channels;
    lc.flops = 3 * lc.forwardFlops;
  } else if (l.kind == "Dense") {
    lc.forwardFlops = 2 * batch * double(channelsTimesVoxels(x)) * l.output.channels;
    lc.flops = 3 * lc.forwardFlops;
  }
  if (l.kind == "FlattenDense")
    lc.work = batch * x.channels * ownedIn;
  else if (l.kind == "Dense")
    lc.work = batch * double(channelsTimesVoxels(x));
  else
    lc.work = batch * ownedOut;
  lc.bytes = scalar * trafficElements(l, inElements, outElements, dataGradient);
}

// Halo exchanges of the layer's input over its sub-grid: a gather before forward unless the
// reader filled the ghosts, a scatter-add after backward where a gradient flows into the
// input; none on a rank without samples (a shadow is in no sub-grid; an empty one sends 0).
void countHalos(LayerCost& lc, const LayerPlan& l, const BlockDecomposition& inDec, const Int3& at,
                int channels, bool dataGradient, double scalar) {
  const GhostMap& ghosts = l.inputGhosts.at(0);
  if (ghosts.none() || l.grid[0] * l.grid[1] * l.grid[2] <= 1 || lc.localBatch <= 0) return;
  const HaloPlan h = planHalo(inDec, at, ghosts, l.name);
  if (!dataGradient) return;
  const double batch = lc.localBatch;
  lc.gather = Impl::haloTraffic(h.sends, batch * channels, scalar);
  lc.scatter = Impl::haloTraffic(h.recvs, batch * channels, scalar);
}

// Layer `id` on the rank at spatial `coords`, holding `memory` for it.
LayerCost countLayer(const RunPlan& r, int id, const Int3& coords, const GraphMemory& memory) {
  const ModelPlan& m = r.model;
  const LayerPlan& l = m.layers[id];
  LayerCost lc;
  lc.name = l.name;
  lc.kind = l.kind;
  lc.key = layerKey(r, id, coords);
  lc.memory = memory;
  lc.localBatch = m.localBatch(id, coords);  // the samples it holds on the layer's grid
  if (l.kind == "Redistribute") {
    // An exchange, no kernel of its own: every rank of the group takes part, with samples
    // or not.
    lc.forward = redistributionTraffic(r, id, coords, false);
    lc.adjoint = redistributionTraffic(r, id, coords, true);
    return lc;
  }
  const TensorShape& x = m.shape(l.inputs.at(0));
  const Int3 at = m.place(id, coords).coords;  // where the rank sits on the layer's grid
  const BlockDecomposition inDec(x.extents, l.grid), outDec(l.output.extents, l.grid);
  const double ownedOut = l.volume ? double(outDec.ownedBox(at).size()) : 1.0;
  const double ownedIn = double(inDec.ownedBox(at).size());
  const bool dataGradient = !readsModelInput(l);
  countArithmetic(lc, m, l, ownedIn, ownedOut, dataGradient, valueBytes(r));
  countHalos(lc, l, inDec, at, x.channels, dataGradient, valueBytes(r));
  return lc;
}

// Recomputation: which layers run their forward again (a rank without samples runs nothing),
// and which gather again because their windowed input is recomputed (StepCost.hpp's rule, as
// Graph::recomputeNode exchanges).
void countRecomputation(StepCost& c, const RunPlan& r) {
  const ModelPlan& m = r.model;
  c.recompute = m.options.inference ? std::vector<RecomputeSegment>{} : m.recomputeSegments();
  if (c.recompute.empty()) return;
  const std::vector<bool> recomputed = recomputedOutputs(m.stepGraph(), c.recompute);
  for (std::size_t id = 0; id < c.layers.size(); ++id) {
    LayerCost& lc = c.layers[id];
    const bool moves = lc.kind == "Redistribute";
    lc.recomputed = recomputed[id] && (moves || lc.passes > 0);
    if (lc.recomputed) lc.recomputeFlops = lc.forwardFlops;
    if (lc.recomputed && moves) c.redistributeBytes += lc.forward.bytes;
    // A recomputed input holds its owned cells only: a layer running forward again gathers its
    // ghosts again, and so does a convolution's backward (backward-weights reads them); a
    // pool's backward reads none (argmax kept, or no input at all).
    const int in = m.layers[id].inputs.at(0);
    const bool readsGhosts = lc.recomputed || lc.kind == "Conv3d" || lc.kind == "ConvTranspose3d";
    if (in != ModelPlan::Input && recomputed[std::size_t(in)] && readsGhosts)
      lc.regather = lc.gather;
    c.haloBytes += lc.regather.bytes;
  }
}

// Each gradient summed over the ranks holding its parameter (ModelPlan::gradients).
void countReductions(StepCost& c, const RunPlan& r, const Int3& coords) {
  for (int id = 0; id < int(r.model.layers.size()); ++id)
    for (const PlannedGradient& g : r.model.gradients(id, coords, r.groups)) {
      if (g.ranks == 1) continue;                                         // nothing to sum
      c.allreduceBytes += std::size_t(double(g.values) * floatBytes(r));  // float in 16-bit runs
      ++c.reductions;
    }
}

// The rank's reads (its ghosted subvolume of each of its group's samples, its owned labels),
// the batch's preprocessing into the model's input, and whether the rank's share of the
// training set fits its cache.
void countInput(StepCost& c, const RunPlan& r, const Int3& coords, const IoModel& io) {
  const ModelPlan& m = r.model;
  const data::Subvolume sub = inputSubvolume(r, coords);
  const data::SampleSpec spec = sampleSpec(m.traits, m.input.extents);
  double perSample = double(spec.channels) * double(sub.read.size()) * io.fileScalarBytes;
  if (!spec.labels.empty()) perSample += double(sub.owned.size()) * io.labelBytes;
  if (!spec.targets.empty()) perSample += double(spec.numTargets) * sizeof(float);
  c.ioBytes = std::size_t(perSample * m.input.batch);

  // The batch's preprocessing: the stored values of the ghosted box to the model's input.
  const double inputElements = double(m.input.batch) * spec.channels * double(sub.local.size());
  c.input.name = "input";
  c.input.kind = "Preprocess";
  c.input.key = "Preprocess c" + std::to_string(spec.channels) +
                (io.fileScalarBytes == 2 ? " int16" : " float32") + (r.log1p ? " log1p " : " ") +
                toString(r.precision);
  c.input.work = double(m.input.batch) * double(sub.local.size());
  c.input.bytes = inputElements * (io.fileScalarBytes + valueBytes(r));
  c.input.passes = 1;
  const double share = std::ceil(double(r.train.listing.samples) / r.groups) * perSample;
  c.cached = r.cacheBytes > 0 && share <= double(r.cacheBytes);
}

// The optimizer's step over the rank's parameters.
LayerCost countUpdate(const RunPlan& r, const Int3& coords) {
  const Index local = updatedParameters(r, coords);
  LayerCost u;
  u.name = "update";
  u.kind = "Update";
  u.key =
      std::string("Update ") + (r.optimizerStates == 2 ? "adam " : "sgd ") + toString(r.precision);
  u.work = double(local);
  // Zeroing the gradient, the update: reading the gradient and the value, writing the value,
  // reading and writing each state value.
  // All of it float in a 16-bit run (master weights).
  u.bytes = double(local) * floatBytes(r) * (4 + 2 * r.optimizerStates);
  u.passes = 2;
  return u;
}

}  // namespace

std::size_t replicatedStateBytes(const RunPlan& r, const Int3& coords) {
  const double master = floatBytes(r);
  const Index shards = r.stateSharding == StateSharding::Gradients
                           ? updatedParameters(r, coords, /*reducedOnly=*/true)
                           : 0;
  return std::size_t(double(updatedParameters(r, coords)) * master * r.optimizerStates +
                     double(shards) * master);
}

StepCost countStep(const RunPlan& r, const Int3& coords, const IoModel& io) {
  StepCost c;
  c.coords = coords;
  const std::vector<GraphMemory> memory = predictLayerMemoryIn(r.precision, r.model, coords);
  for (int id = 0; id < int(r.model.layers.size()); ++id) {
    c.layers.push_back(countLayer(r, id, coords, memory[std::size_t(id)]));
    const LayerCost& lc = c.layers.back();  // a layer's traffic of the other kind is zero
    c.redistributeBytes += lc.forward.bytes + lc.adjoint.bytes;
    c.haloBytes += lc.gather.bytes + lc.scatter.bytes;
  }
  countRecomputation(c, r);
  countReductions(c, r, coords);
  c.labels = labelMove(r, coords);
  c.redistributeBytes += c.labels.forward.bytes;
  countInput(c, r, coords, io);
  c.update = countUpdate(r, coords);
  // What must fit the rank's memory: all it holds but the caches (host memory a deck sets aside
  // on purpose) and a checkpoint's staging (host memory on a GPU machine, and only while a
  // checkpoint is written); `check` counts both on the machine at hand.
  const RankMemory held = rankMemory(r, coords);
  c.memoryBytes = held.total() - held.cache - held.checkpoint;
  return c;
}

namespace {

// Seconds per unit of work of a calibrated timing at `work`: interpolated in log(work) between
// the measured sizes, the nearest one's outside them.
double calibratedSeconds(const LayerTiming& t, double work) {
  const std::vector<double>& v = t.voxels;
  auto perWork = [&](std::size_t i) { return t.seconds[i] / v[i]; };
  if (work <= v.front()) return work * perWork(0);
  if (work >= v.back()) return work * perWork(v.size() - 1);
  std::size_t i = 1;
  while (v[i] < work) ++i;
  const double a = std::log(v[i - 1]), b = std::log(v[i]), f = (std::log(work) - a) / (b - a);
  return work * std::exp((1 - f) * std::log(perWork(i - 1)) + f * std::log(perWork(i)));
}

// Latency and bandwidth (bytes per second) of a communicator of `size` ranks whose members are
// `stride` ranks apart: inside one node while they span no more ranks than a node holds.
struct Link {
  double alpha, beta;
};
Link link(const Network& n, int size, int stride, bool allAtOnce) {
  if (double(size) * stride <= n.ranksPerNode) return {1e-6 * n.intraLatencyUs, 1e9 * n.intraGBs};
  // Across nodes: a ring crosses each node boundary once (one rank of the node sends at a time);
  // every rank sending at once (a halo, recursive halving) shares the node's injection bandwidth.
  const double share =
      allAtOnce ? n.interGBs / std::min(n.ranksPerNode, size * stride) : n.interGBs;
  return {1e-6 * n.interLatencyUs, 1e9 * std::min(n.intraGBs, share)};
}

// The machine's algorithm for long messages; short ones (batch-norm statistics, a bias) go by
// recursive doubling, log2(p) rounds of the whole message, whichever is faster, as MPI
// libraries and NCCL switch by message size.
double allreduceSeconds(const Network& n, double bytes, int size, int stride) {
  if (size <= 1 || bytes <= 0) return 0;
  const double p = size, rounds = std::ceil(std::log2(p));
  const Link all = link(n, size, stride, true);
  const double doubling = rounds * (all.alpha + bytes / all.beta);
  if (n.allreduce == AllreduceAlgorithm::Ring) {
    const Link l = link(n, size, stride, false);
    return std::min(doubling, 2 * (p - 1) * l.alpha + 2 * (p - 1) / p * bytes / l.beta);
  }
  return std::min(doubling, 2 * rounds * all.alpha + 2 * (p - 1) / p * bytes / all.beta);
}

}  // namespace

namespace {

// The machine's rates for one run's step: a layer's seconds from a calibrated timing or the
// peak rates, and the seconds of its exchanges over the group's links.
struct StepRates {
  StepRates(const RunPlan& r, const Machine& m)
      : machine(m),
        peak(1e9 * peakGflops(m.rank, r.precision)),  // 16-bit: the machine's 16-bit rate
        memory(1e9 * m.rank.memoryGBs * m.rank.memoryEfficiency),
        haloLink(link(m.network, r.grid[0] * r.grid[1] * r.grid[2], 1, true)) {}

  // A calibrated timing where one matches, else the peak rates.
  void time(LayerCost& lc) const {
    if (const LayerTiming* t = machine.timing(lc.key)) {
      lc.computeSeconds = calibratedSeconds(*t, lc.work);
      lc.calibrated = true;
    } else {
      lc.computeSeconds = lc.flops / (peak * machine.rank.convolutionEfficiency) +
                          lc.bytes / memory + 1e-6 * machine.rank.layerOverheadUs * lc.passes;
    }
  }
  double exchange(const HaloTraffic& h) const {
    return h.neighbours * haloLink.alpha + double(h.bytes) / haloLink.beta +
           2 * double(h.packedBytes) / memory;  // pack and unpack
  }
  // A redistribution moves its bytes over the group's links like a halo; a rank gathering a
  // tensor from many waits for the larger of what it sends and what it receives.
  double move(const RedistributeTraffic& t) const {
    return t.peers * haloLink.alpha + double(std::max(t.bytes, t.receivedBytes)) / haloLink.beta +
           double(t.touchedBytes) / memory;
  }

  const Machine& machine;
  double peak, memory;  // FLOP/s, bytes/s
  Link haloLink;
};

// Each layer's compute, halo and redistribution seconds and its backward share, summed into
// the step's phases.
void timeLayers(StepCost& c, const RunPlan& r, const StepRates& rates, const Int3& coords) {
  const Network& net = rates.machine.network;
  const int spatial = r.grid[0] * r.grid[1] * r.grid[2];
  for (int id = 0; id < int(c.layers.size()); ++id) {
    LayerCost& lc = c.layers[id];
    const LayerPlan& l = r.model.layers[id];
    if (l.kind == "Redistribute") {
      lc.recomputeSeconds = lc.recomputed ? rates.move(lc.forward) : 0.0;
      lc.redistributeSeconds =
          rates.move(lc.forward) + rates.move(lc.adjoint) + lc.recomputeSeconds;
      lc.backwardSeconds = rates.move(lc.adjoint);
      c.phases.redistribute += lc.redistributeSeconds;
      continue;
    }
    rates.time(lc);
    // The layers' own collectives run inside them (the trainer counts them as compute):
    // batch-norm statistics forward and backward (over the world or the group, wherever the
    // samples sit), the first dense layer's partial products over its sub-grid.
    const int subGrid = l.grid[0] * l.grid[1] * l.grid[2];
    if (l.kind == "BatchNorm3d") {
      const int over = r.model.options.batchNormPerGroup ? spatial : r.world;
      lc.computeSeconds += 2 * allreduceSeconds(net, 2.0 * 8 * l.output.channels, over, 1);
    } else if (l.kind == "FlattenDense" && r.model.place(id, coords).active) {
      lc.computeSeconds +=
          allreduceSeconds(net, floatBytes(r) * lc.localBatch * l.output.channels, subGrid, 1);
    }
    lc.haloSeconds = rates.exchange(lc.gather) + rates.exchange(lc.scatter);
    const double backwardPasses =
        lc.passes > 0 ? lc.computeSeconds * (lc.passes - 1) / lc.passes : 0.0;
    lc.backwardSeconds = backwardPasses + rates.exchange(lc.scatter);
    // Recomputation: the forward's share of the layer's time once more, the gather again.
    const double forward = lc.recomputed ? lc.computeSeconds / lc.passes : 0.0,
                 regather = rates.exchange(lc.regather);
    lc.recomputeSeconds = forward + regather;
    lc.computeSeconds += forward;
    lc.haloSeconds += regather;
    c.phases.compute += lc.computeSeconds;
    c.phases.halo += lc.haloSeconds;
  }
}

// Backward runs from the last layer to the first; a layer's reductions start when its
// backward pass ends and run one after another; the step waits, before the update, for what
// the rest of the backward pass did not cover. A column shard's replicas lie a sub-grid
// apart inside a group, a group apart across groups.
void timeReductions(StepCost& c, const RunPlan& r, const Network& net, const Int3& coords) {
  double clock = 0, reducedAt = 0;
  for (int id = int(c.layers.size()) - 1; id >= 0; --id) {
    const LayerCost& lc = c.layers[id];
    const Int3& g3 = r.model.layers[id].grid;
    // A segment's recomputation runs right before its last layer's backward.
    for (const RecomputeSegment& s : c.recompute)
      if (s.last == id)
        for (int k = s.first; k <= s.last; ++k) clock += c.layers[k].recomputeSeconds;
    clock += lc.backwardSeconds;
    for (const PlannedGradient& g : r.model.gradients(id, coords, r.groups)) {
      const double bytes = double(g.values) * floatBytes(r);
      const double t =
          allreduceSeconds(net, bytes, g.ranks, g.columnShard ? g3[0] * g3[1] * g3[2] : 1);
      if (t > 0) reducedAt = std::max(clock, reducedAt) + t;
      c.allreduceSeconds += t;
    }
  }
  c.phases.allreduce =
      net.reductionsOverlap ? std::max(0.0, reducedAt - clock) : c.allreduceSeconds;
}

}  // namespace

StepCost predictStep(const RunPlan& r, const Machine& machine, const Int3& coords,
                     const IoModel& io) {
  StepCost c = countStep(r, coords, io);
  const StepRates rates(r, machine);
  rates.time(c.input);
  rates.time(c.update);
  c.phases.compute += c.input.computeSeconds + c.update.computeSeconds;
  c.labels.redistributeSeconds = rates.move(c.labels.forward);
  c.phases.redistribute += c.labels.redistributeSeconds;
  timeLayers(c, r, rates, coords);
  timeReductions(c, r, machine.network, coords);

  const double readRate = 1e9 * std::min(machine.fileSystem.readGBsPerRank,
                                         machine.fileSystem.aggregateReadGBs / r.world);
  c.ioSeconds = c.cached ? 0.0 : double(c.ioBytes) / readRate;
  const double busy = c.phases.compute + c.phases.halo + c.phases.allreduce + c.phases.redistribute;
  c.phases.io = r.prefetch ? std::max(0.0, c.ioSeconds - busy) : c.ioSeconds;
  c.samplesPerSecond = double(r.train.batch) / c.phases.step();
  return c;
}

IoModel ioModelFor(const TrainConfig& config) {
  const ModelTraits t = modelTraits(config.model);
  IoModel io;
  io.fileScalarBytes = t.task->fields(t.outputs).labels.empty() ? 2 : 4;
  return io;
}

StepCost predictSlowestRank(const RunPlan& r, const Machine& machine, const IoModel& io) {
  const Int3& g = r.grid;
  const std::vector<Int3> ranks{
      {0, 0, 0}, {g[0] / 2, g[1] / 2, g[2] / 2}, {g[0] - 1, g[1] - 1, g[2] - 1}};
  StepCost slowest;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    StepCost c = predictStep(r, machine, ranks[i], io);
    if (i == 0 || c.phases.step() > slowest.phases.step()) slowest = std::move(c);
  }
  return slowest;
}

}  // namespace hybrid3d
