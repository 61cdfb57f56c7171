#include <algorithm>
#include <cstdint>

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

// train/Checkpoint.cpp's writeCheckpoint and readCheckpoint: each rank writes its own part of
// every array straight into the file and reads only its own part back, gathering nothing. A
// column shard's part travels to (and back from) the rank whose contiguous slab of the flat
// tensor holds it: the largest such array stages the indices of the rank's part (8 bytes a
// value) and its slab of 1/P of the tensor twice with their indices. On a device each array the
// rank holds is also copied to the host, one at a time; the largest is a parameter's local value
// (an optimizer state is at most that, a sharded one a part of it).
std::size_t checkpointBytes(const RunPlan& r, const Int3& coords) {
  const ModelPlan& m = r.model;
  const std::size_t ranks = std::size_t(r.groups) * std::size_t(r.grid[0] * r.grid[1] * r.grid[2]);
  std::size_t largest = 0, slabs = 0;
  for (int id = 0; id < int(m.layers.size()); ++id) {
    const LayerPlan& l = m.layers[std::size_t(id)];
    for (std::size_t t = 0; t < l.tensors.size(); ++t) {
      std::size_t local = std::size_t(l.tensors[t]);
      if (t == 0 && l.columnShardRows > 0) {  // the rank's columns: all it holds but the others
        local = std::size_t(m.localParameters(id, coords) - (l.parameters - l.tensors[0]));
        const std::size_t slab = (std::size_t(l.tensors[0]) + ranks - 1) / ranks;
        slabs = std::max(slabs, local * sizeof(std::int64_t) +
                                    slab * (sizeof(std::int64_t) + 2 * floatBytes(r)));
      }
      largest = std::max(largest, local);
    }
  }
  return slabs + (hostModel ? 0 : largest * floatBytes(r));
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
