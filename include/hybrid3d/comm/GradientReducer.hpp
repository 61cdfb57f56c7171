#pragma once
/// \file
/// Sums weight gradients with non-blocking collectives, one per parameter, started as soon as a
/// layer's backward has produced its gradients and completed together before the optimizer step:
/// the reduction of late layers overlaps the backward pass of earlier ones. Each is a
/// persistent request set up here (comm/PersistentSum.hpp, comm/PersistentScatterSum.hpp), so a
/// step's reductions allocate nothing. Each gradient is summed over the ranks its scope names
/// (comm/GradientScope.hpp): the world for a replicated parameter, the data-parallel
/// communicator for a column shard; over a communicator of one rank nothing is done at all.
///
/// ReduceTo::Whole (an allreduce) leaves the whole sum in every rank's gradient;
/// ReduceTo::Shards (a reduce-scatter) leaves in a buffer of its own only this rank's part of
/// the sum (comm/ShardRange.hpp over the gradient's communicator): what an optimizer that
/// updates only that part needs (train/ReplicatedStateShards.hpp), and 1/P of the receive
/// memory.
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
#include <hybrid3d/comm/PersistentScatterSum.hpp>
#include <hybrid3d/comm/PersistentSum.hpp>
#include <hybrid3d/comm/ShardRange.hpp>
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

/// The ranks `g` is summed over: its own communicator, else `world` or `dataParallel` as its
/// scope says.
template <class T, class MemorySpace>
MPI_Comm reductionComm(const ScopedGradient<T, MemorySpace>& g, MPI_Comm world,
                       MPI_Comm dataParallel) {
  return g.comm != MPI_COMM_NULL ? g.comm : g.scope == GradientScope::World ? world : dataParallel;
}

/// Where a reduction leaves the sum (see the top of this file).
enum class ReduceTo { Whole, Shards };

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
  /// its scope says, whole or into shards as `to` says. Collective over `world` (both
  /// communicators are duplicated, owned).
  GradientReducer(MPI_Comm world, MPI_Comm dataParallel,
                  const std::vector<std::vector<scoped_gradient>>& layers,
                  ReduceTo to = ReduceTo::Whole)
      : world_(world), data_(dataParallel), started_(layers.size(), false) {
    for (const auto& grads : layers) {
      layers_.emplace_back();
      for (const auto& g : grads) {
        const MPI_Comm comm = reductionComm(g, world_.get(), data_.get());
        int size;
        MPI_Comm_size(comm, &size);
        if (size == 1) continue;  // the sum is the gradient itself
        if (g.grad.size() > static_cast<std::size_t>(INT_MAX))
          fail("gradient reduction: '", g.grad.label(), "' has more than 2^31 elements");
        layers_.back().push_back(reduction(g.grad, comm, size, to));
        bytesPerStep_ += g.grad.size() * sizeof(T);
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
      keepForAbandonedOperation(std::move(layers_), std::move(world_), std::move(data_));
      return;
    }
    finish();
    layers_.clear();  // frees the persistent requests before their communicators (members)
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
      for (const Reduction& r : layers_[layer])
        Kokkos::deep_copy(exec, r.host, r.grad);  // asynchronous: pinned
    exec.fence();  // gradients (or their staged copies) complete before MPI reads them
    for (Reduction& r : layers_[layer]) {
      r.start();
      PhaseTimers::global().allreduceBytes += r.grad.size() * sizeof(T);
    }
    started_[layer] = true;
  }

  /// For gradients written on the default execution space instance.
  void start(std::size_t layer) { start(execution_space(), layer); }

  /// Wait for every started reduction; afterwards each gradient (or its shard: sum()) holds its
  /// sum for work issued to `exec` (the copies back from the staging buffers are asynchronous
  /// on it).
  void finish(const execution_space& exec) {
    ScopedPhase timed(PhaseTimers::global().allreduce);
    for (std::size_t layer = 0; layer < started_.size(); ++layer) {
      if (!started_[layer]) continue;
      for (Reduction& r : layers_[layer]) MPI_Wait(&r.request(), MPI_STATUS_IGNORE);
      started_[layer] = false;
      if constexpr (Stage)
        for (const Reduction& r : layers_[layer])  // a shard's part lands at the buffer's start
          Kokkos::deep_copy(exec, r.sum,
                            Kokkos::subview(r.host, std::make_pair(std::size_t(0), r.sum.size())));
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

  /// Where finish() leaves the sum of `grad` (one of the gradients given): `grad` itself, or
  /// with ReduceTo::Shards over more than one rank, this rank's part of it.
  grad_view sum(const grad_view& grad) const {
    for (const auto& reductions : layers_)
      for (const Reduction& r : reductions)
        if (r.grad.data() == grad.data()) return r.sum;
    return grad;
  }

private:
  using host_view = StagingBuffer<T, MemorySpace>;  // empty unless Stage

  // One gradient's reduction: the gradient, where its sum lands, its staged copy and the
  // persistent request (a sum or a scatter-sum).
  struct Reduction {
    grad_view grad, sum;
    host_view host;
    std::unique_ptr<PersistentSum> whole;
    std::unique_ptr<PersistentScatterSum> shards;
    void start() { whole ? whole->start() : shards->start(); }
    MPI_Request& request() { return whole ? whole->request() : shards->request(); }
  };

  static Reduction reduction(const grad_view& grad, MPI_Comm comm, int size, ReduceTo to) {
    Reduction r;
    r.grad = r.sum = grad;
    r.host = stagingBuffer<T, MemorySpace, Stage>(grad.label(), grad.size());
    T* data = Stage ? r.host.data() : grad.data();
    const int count = static_cast<int>(grad.size());
    if (to == ReduceTo::Whole) {
      r.whole = std::make_unique<PersistentSum>(data, count, mpiType<T>(), comm);
      return r;
    }
    int rank;
    MPI_Comm_rank(comm, &rank);
    r.sum = grad_view(Kokkos::view_alloc(grad.label() + " (shard of the sum)"),
                      shardRange(grad.size(), rank, size).count);
    // Staged: in place in the host copy (this rank's part lands at its start, finish()).
    r.shards = std::make_unique<PersistentScatterSum>(
        Stage ? MPI_IN_PLACE : static_cast<const void*>(data), Stage ? data : r.sum.data(),
        shardCounts(grad.size(), size), mpiType<T>(), comm);
    return r;
  }

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

  // Duplicates, declared first: freed last, after the persistent requests that use them.
  OwnedComm world_, data_;
  std::vector<std::vector<Reduction>> layers_;  // per layer (one-rank scopes left out)
  std::vector<bool> started_;                   // per layer: its sums are in flight
  std::size_t bytesPerStep_ = 0;
};

}  // namespace hybrid3d
