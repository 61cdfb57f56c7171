#include <algorithm>

#include <hybrid3d/core/Precision.hpp>
#include <hybrid3d/core/StagingSpace.hpp>
#include <hybrid3d/data/BatchLoader.hpp>
#include <hybrid3d/data/Preprocess.hpp>
#include <hybrid3d/plan/RankMemory.hpp>
#include <hybrid3d/train/RunChecks.hpp>

#include "impl/RankShare.hpp"

namespace hybrid3d {

namespace {

constexpr bool hostModel =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, DefaultMemorySpace>::accessible;

// One value of what stays float in a 16-bit run: parameters, their gradients and state.
std::size_t floatBytes(const RunPlan& r) { return parameterBytes(r.precision); }

// Each set's loader (the training set's, the validation set's: Trainer.cpp makes one each): its
// staging batches and the preprocessing's device staging into `data`, its cache, at most its
// budget, into `cache`.
void countData(RankMemory& out, const RunPlan& r, const Int3& coords) {
  const ModelPlan& m = r.model;
  const data::SampleSpec spec = sampleSpec(m.traits, m.input.extents);
  const data::Subvolume sub = Impl::inputSubvolume(r, coords);
  // The preprocessing's staging does not depend on the precision: float's stands for all.
  const std::size_t preprocess =
      data::Preprocess<float, DefaultMemorySpace>::stagingBytes(spec.channels, sub);
  for (const SetPlan* set : {&r.train, &r.validation}) {
    if (set->listing.samples == 0) continue;
    out.data += data::BatchLoader::stagingBytes(set->localBatch, spec, sub) + preprocess;
    out.cache += data::BatchLoader::cacheBytesAtMost(set->listing.samples, spec, sub, r.cacheBytes);
  }
}

// A column shard's weight values over every rank of the world: each spatial rank's columns, as
// many times as there are groups (layers/DistributedParameter.hpp's gatherGlobal receives all of
// them, replicas included, before it places them).
std::size_t gatheredWeightValues(const RunPlan& r, int id) {
  const LayerPlan& l = r.model.layers[std::size_t(id)];
  const Index others = l.parameters - l.tensors.at(0);  // the bias, replicated
  std::size_t values = 0;
  for (int d = 0; d < r.grid[0]; ++d)
    for (int h = 0; h < r.grid[1]; ++h)
      for (int w = 0; w < r.grid[2]; ++w)
        values += std::size_t(r.model.localParameters(id, {d, h, w}) - others);
  return values * std::size_t(r.groups);
}

// train/Checkpoint.cpp's writeCheckpoint: a column shard's arrays (its value and each optimizer
// state) gathered into global tensors on every rank, all held until the file is written, the
// last gather's receive buffer beside them; on a device each array also copied to the host, one
// at a time.
std::size_t checkpointBytes(const RunPlan& r, const Int3& coords) {
  const ModelPlan& m = r.model;
  const std::size_t arrays = 1 + std::size_t(r.optimizerStates);
  std::size_t gathered = 0, largestReceive = 0, largestLocal = 0;
  for (int id = 0; id < int(m.layers.size()); ++id) {
    const LayerPlan& l = m.layers[std::size_t(id)];
    largestLocal = std::max(largestLocal, std::size_t(m.localParameters(id, coords)));
    if (l.columnShardRows == 0) continue;
    gathered += arrays * std::size_t(l.tensors.at(0));  // the sharded weight, whole
    largestReceive = std::max(largestReceive, gatheredWeightValues(r, id));
  }
  return (gathered + largestReceive + (hostModel ? 0 : largestLocal)) * floatBytes(r);
}

}  // namespace

ParameterState parameterStateBytes(const RunPlan& r, const Int3& coords) {
  ParameterState s;
  // The state of the values the rank updates: all it holds, or its shards (Parallel/shard
  // replicated state).
  s.optimizer = std::size_t(Impl::updatedParameters(r, coords)) * r.optimizerStates * floatBytes(r);
  if (r.stateSharding == StateSharding::Gradients) {
    // The reduce-scatter leaves each sum's part in a buffer of its own (MPI's scratch for it
    // is its own affair, as with the allreduce's).
    s.reduction = std::size_t(Impl::updatedParameters(r, coords, true)) * floatBytes(r);
    return s;
  }
  constexpr std::size_t copies = 1 + (mpiStagesThroughHost<DefaultMemorySpace> ? 1 : 0);
  for (int id = 0; id < int(r.model.layers.size()); ++id)
    for (const PlannedGradient& g : r.model.gradients(id, coords, r.groups))
      if (g.ranks > 1) s.reduction += std::size_t(g.values) * floatBytes(r) * copies;
  return s;
}

RankMemory rankMemory(const RunPlan& r, const Int3& coords) {
  RankMemory m;
  m.model = r.memory.at(std::size_t((coords[0] * r.grid[1] + coords[1]) * r.grid[2] + coords[2]));
  m.state = parameterStateBytes(r, coords);
  countData(m, r, coords);
  m.checkpoint = checkpointBytes(r, coords);
  m.fixedBytes = r.fixedMemoryBytes;
  return m;
}

}  // namespace hybrid3d
