#pragma once
/// \file
/// Sums weight gradients with non-blocking allreduces, one per parameter, started as soon as a
/// layer's backward has produced its gradients and completed together before the optimizer step:
/// the reduction of late layers overlaps the backward pass of earlier ones. Each is a
/// persistent request set up here (comm/PersistentSum.hpp), so a step's reductions allocate
/// nothing. Each gradient is summed over the ranks its scope names (comm/GradientScope.hpp): the
/// world for a replicated parameter, the data-parallel communicator for a column shard; over a
/// communicator of one rank nothing is done at all.
///
/// Device gradients are staged through pinned host buffers allocated once, here, unless hybrid3d
/// was built with GPU-aware MPI (core/StagingSpace.hpp). A layer without parameters starts
/// nothing and fences nothing.

#include <climits>
#include <memory>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/Config.hpp>
#include <hybrid3d/comm/GradientScope.hpp>
#include <hybrid3d/comm/MpiTypes.hpp>
#include <hybrid3d/comm/PersistentSum.hpp>
#include <hybrid3d/core/OwnedComm.hpp>
#include <hybrid3d/core/StagingSpace.hpp>
#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/PhaseTimers.hpp>
#include <hybrid3d/core/Unwinding.hpp>

namespace hybrid3d {

/// A parameter gradient and the ranks it is summed over: the scope's communicator, or `comm`
/// where one is given (a column shard on a layer grid: its replicas, grid/LayerGrid.hpp; borrowed,
/// it must outlive the reducer).
template <class T, class MemorySpace>
struct ScopedGradient {
  Kokkos::View<T*, MemorySpace> grad;
  GradientScope scope = GradientScope::World;
  MPI_Comm comm = MPI_COMM_NULL;
};

/// Stage: whether MPI is handed host copies (by default what MemorySpace and the build need; a
/// parameter only so that tests can run the staged path on the host).
template <class T, class MemorySpace = DefaultMemorySpace,
          bool Stage = mpiStagesThroughHost<MemorySpace>>
class GradientReducer {
  HYBRID3D_ASSERT_SPACE(MemorySpace);

public:
  using grad_view = Kokkos::View<T*, MemorySpace>;
  using execution_space = typename MemorySpace::execution_space;

  using scoped_gradient = ScopedGradient<T, MemorySpace>;

  /// `layers[i]` holds the gradients of layer i, each summed over `world` or `dataParallel` as
  /// its scope says. Collective over `world` (both communicators are duplicated, owned).
  GradientReducer(MPI_Comm world, MPI_Comm dataParallel,
                  const std::vector<std::vector<scoped_gradient>>& layers)
      : world_(world), data_(dataParallel), started_(layers.size(), false) {
    for (const auto& grads : layers) {
      layers_.emplace_back();
      comms_.emplace_back();
      std::vector<host_view> staged;
      for (const auto& g : grads) {
        const MPI_Comm comm = g.comm != MPI_COMM_NULL           ? g.comm
                              : g.scope == GradientScope::World ? world_.get()
                                                                : data_.get();
        int size;
        MPI_Comm_size(comm, &size);
        if (size == 1) continue;  // the sum is the gradient itself
        if (g.grad.size() > static_cast<std::size_t>(INT_MAX))
          fail("gradient reduction: '", g.grad.label(), "' has more than 2^31 elements");
        layers_.back().push_back(g.grad);
        comms_.back().push_back(comm);
        staged.push_back(stagingBuffer<T, MemorySpace, Stage>(g.grad.label(), g.grad.size()));
        bytesPerStep_ += g.grad.size() * sizeof(T);
      }
      host_.push_back(staged);
      sums_.emplace_back();
      for (std::size_t p = 0; p < layers_.back().size(); ++p) {
        T* data = Stage ? host_.back()[p].data() : layers_.back()[p].data();
        sums_.back().push_back(std::make_unique<PersistentSum>(
            data, static_cast<int>(layers_.back()[p].size()), mpiType<T>(), comms_.back()[p]));
      }
    }
  }
  /// Every gradient summed over `comm` (the world).
  GradientReducer(MPI_Comm comm, const std::vector<std::vector<grad_view>>& layers)
      : GradientReducer(comm, comm, worldScoped(layers)) {}
  ~GradientReducer() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (unwinding() && pending()) {
      // An error on this rank: the others may never join the reductions, so do not wait for
      // them (core/Unwinding.hpp). The communicator is left to the process's end as well, not
      // freed: MPI_Comm_free is collective and may block (Unwinding.hpp says why).
      keepForAbandonedOperation(std::move(layers_), std::move(host_), std::move(sums_),
                                std::move(world_), std::move(data_));
      return;
    }
    finish();
    sums_.clear();  // frees the persistent requests before their communicators (members)
  }
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  /// Start summing layer i's gradients (call once its backward, issued to `exec`, is done;
  /// order is free, but every rank must start the same layers in the same order, as MPI
  /// collectives require). Fences `exec` when the layer has gradients, and nothing else.
  void start(const execution_space& exec, std::size_t layer) {
    if (started_.at(layer)) fail("gradient reduction: layer ", layer, " started twice");
    if (layers_[layer].empty()) return;  // nothing to reduce, nothing to wait for
    if constexpr (Stage)
      for (std::size_t p = 0; p < layers_[layer].size(); ++p)
        Kokkos::deep_copy(exec, host_[layer][p], layers_[layer][p]);  // asynchronous: pinned
    exec.fence();  // gradients (or their staged copies) complete before MPI reads them
    for (const auto& sum : sums_[layer]) sum->start();
    for (const auto& g : layers_[layer])
      PhaseTimers::global().allreduceBytes += g.size() * sizeof(T);
    started_[layer] = true;
  }

  /// For gradients written on the default execution space instance.
  void start(std::size_t layer) { start(execution_space(), layer); }

  /// Wait for every started reduction; afterwards each gradient holds the world sum for work
  /// issued to `exec` (the copies back from the staging buffers are asynchronous on it).
  void finish(const execution_space& exec) {
    ScopedPhase timed(PhaseTimers::global().allreduce);
    for (std::size_t layer = 0; layer < started_.size(); ++layer) {
      if (!started_[layer]) continue;
      for (const auto& sum : sums_[layer]) MPI_Wait(&sum->request(), MPI_STATUS_IGNORE);
      started_[layer] = false;
      if constexpr (Stage)
        for (std::size_t p = 0; p < layers_[layer].size(); ++p)
          Kokkos::deep_copy(exec, layers_[layer][p], host_[layer][p]);
    }
  }
  /// Returns with the sums in the gradients (fences the default instance).
  void finish() {
    const execution_space exec;
    finish(exec);
    exec.fence();
  }

  /// Bytes this rank hands to MPI per step: what the reduction really moves (each summed
  /// gradient once; gradients over a one-rank communicator are not reduced).
  std::size_t bytesPerStep() const { return bytesPerStep_; }

private:
  static std::vector<std::vector<scoped_gradient>> worldScoped(
      const std::vector<std::vector<grad_view>>& layers) {
    std::vector<std::vector<scoped_gradient>> out;
    for (const auto& grads : layers) {
      out.emplace_back();
      for (const auto& g : grads) out.back().push_back({g, GradientScope::World});
    }
    return out;
  }

  bool pending() const {
    for (const bool started : started_)
      if (started) return true;
    return false;
  }

  using host_view = StagingBuffer<T, MemorySpace>;  // empty unless Stage
  // Duplicates, declared first: freed last, after the persistent requests that use them.
  OwnedComm world_, data_;
  std::vector<std::vector<grad_view>> layers_;  // the gradients to sum (one-rank scopes left out)
  std::vector<std::vector<MPI_Comm>> comms_;    // world_ or data_, per gradient
  std::vector<std::vector<host_view>> host_;
  std::vector<std::vector<std::unique_ptr<PersistentSum>>> sums_;  // one per gradient of layers_
  std::vector<bool> started_;  // per layer: its sums are in flight
  std::size_t bytesPerStep_ = 0;
};

}  // namespace hybrid3d
