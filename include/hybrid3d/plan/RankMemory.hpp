#pragma once
/// \file
/// Everything a rank of a training run holds, by kind, as the plan predicts it: the model
/// (GraphMemory: activations, their gradients, parameters with their gradients, workspace,
/// redistribution buffers), the parameters' state besides them (the optimizer's state values, the
/// gradient reduction's buffers), the data loaders' buffers, a checkpoint write's staging, and
/// the fixed cost of a process (the program, MPI, Kokkos, oneDNN, HDF5, the allocator), which
/// `hybrid3d calibrate` measures into the machine file (unknown without one). Each row comes
/// from the sizes the code allocates (the loaders', the reducer's, the checkpoint's rules), so
/// the total is what a rank's peak resident memory reaches.

#include <cstddef>

#include <hybrid3d/model/GraphMemory.hpp>
#include <hybrid3d/plan/Machine.hpp>
#include <hybrid3d/plan/RunPlan.hpp>

namespace hybrid3d {

/// The parameters' state besides their values and gradients: one function, so that sharding
/// it over a group (docs/design.md, memory) changes one place.
struct ParameterState {
  std::size_t optimizer = 0;  // the optimizer's state values (Adam 2, SGD with momentum 1)
  /// The gradient reduction's: MPI's persistent scratch (one copy of the values summed,
  /// comm/PersistentSum.hpp) and host staging where MPI is handed host copies.
  std::size_t reduction = 0;
};
ParameterState parameterStateBytes(const RunPlan& run, const Int3& coords);

struct RankMemory {
  GraphMemory model;
  ParameterState state;
  /// The loaders' staging batches (training and validation, data::BatchLoader::stagingBytes)
  /// and the preprocessing's device staging.
  std::size_t data = 0;
  /// The loaders' caches: at most the deck's budget per set (Data/cache MiB), host memory a deck
  /// sets aside on purpose (the layout search does not hold it against the rank's memory).
  std::size_t cache = 0;
  /// A checkpoint write or read: each rank writes and reads only its own part of each array, so
  /// nothing is gathered; a column shard's part goes through the rank whose slab of the flat
  /// tensor holds it (the indices of the rank's part, its slab of 1/P twice with indices), and
  /// where the model lives on a device each array is copied to the host, one at a time.
  std::size_t checkpoint = 0;
  double fixedBytes = 0;  // per process, from the machine file; 0: unknown

  bool fixedKnown() const { return fixedBytes > 0; }
  /// What the plan computes from the run's sizes (everything but the fixed cost).
  std::size_t planned() const {
    return model.total() + state.optimizer + state.reduction + data + cache + checkpoint;
  }
  /// What the rank holds at its peak: planned() and the fixed cost where known.
  std::size_t total() const { return planned() + std::size_t(fixedKnown() ? fixedBytes : 0); }
};

/// What the rank at spatial `coords` of `run` holds (RunPlan::memory for the model; the fixed
/// cost RunPlan::fixedMemoryBytes).
RankMemory rankMemory(const RunPlan& run, const Int3& coords);

/// The machine's measured fixed cost per process in bytes (RunPlan::fixedMemoryBytes; 0: the
/// machine file does not give it).
inline double fixedMemoryBytes(const Machine& machine) {
  return machine.rank.fixedMemoryMiB * double(1 << 20);
}

}  // namespace hybrid3d
