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

// The loaders' staging batches and the preprocessing's device staging, for the training set and
// the validation set (each has its own, Trainer.cpp), and the cache's budget.
std::size_t dataBytes(const RunPlan& r, const Int3& coords) {
  const ModelPlan& m = r.model;
  const data::SampleSpec spec = sampleSpec(m.traits, m.input.extents);
  const data::Subvolume sub = Impl::inputSubvolume(r, coords);
  // The preprocessing's staging does not depend on the precision: float's stands for all.
  const std::size_t preprocess =
      data::Preprocess<float, DefaultMemorySpace>::stagingBytes(spec.channels, sub);
  std::size_t bytes = data::BatchLoader::stagingBytes(r.train.localBatch, spec, sub) + preprocess;
  if (r.validation.listing.samples > 0)
    bytes += data::BatchLoader::stagingBytes(r.validation.localBatch, spec, sub) + preprocess;
  return bytes + r.cacheBytes;
}

// train/Checkpoint.cpp's writeCheckpoint: a column shard's arrays (its value and each optimizer
// state) gathered into global tensors, all held until the file is written, the last gather's
// receive buffer beside them; on a device each array also copied to the host, one at a time.
std::size_t checkpointBytes(const RunPlan& r, const Int3& coords) {
  const ModelPlan& m = r.model;
  const std::size_t arrays = 1 + std::size_t(r.optimizerStates);
  std::size_t gathered = 0, largestGather = 0, largestLocal = 0;
  for (int id = 0; id < int(m.layers.size()); ++id) {
    const LayerPlan& l = m.layers[std::size_t(id)];
    largestLocal = std::max(largestLocal, std::size_t(m.localParameters(id, coords)));
    if (l.columnShardRows == 0) continue;
    const std::size_t global = std::size_t(l.tensors.at(0));  // the sharded weight
    gathered += arrays * global;
    largestGather = std::max(largestGather, global);
  }
  return (gathered + largestGather + (hostModel ? 0 : largestLocal)) * floatBytes(r);
}

}  // namespace

ParameterState parameterStateBytes(const RunPlan& r, const Int3& coords) {
  ParameterState s;
  s.optimizer =
      std::size_t(Impl::localParameters(r.model, coords)) * r.optimizerStates * floatBytes(r);
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
  m.data = dataBytes(r, coords);
  m.checkpoint = checkpointBytes(r, coords);
  m.fixedBytes = r.fixedMemoryBytes;
  return m;
}

}  // namespace hybrid3d
