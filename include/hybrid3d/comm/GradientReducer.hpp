#pragma once
// Sums weight gradients over every rank holding a replica (spatial x data = the world) with
// non-blocking allreduces, one per parameter, started as soon as a layer's backward has
// produced its gradients and completed together before the optimizer step: the reduction of
// late layers overlaps the backward pass of earlier ones.
//
// Device gradients are staged through host buffers allocated once, unless hybrid3d was built
// with GPU-aware MPI.

#include <climits>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/Config.hpp>
#include <hybrid3d/comm/MpiTypes.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/PhaseTimers.hpp>
#include <hybrid3d/core/Unwinding.hpp>
#include <hybrid3d/layers/Parameter.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
class GradientReducer {
public:
  using grad_view = Kokkos::View<T*, MemorySpace>;

  // `layers[i]` holds the gradients of layer i. Collective over `comm` (duplicated, owned).
  GradientReducer(MPI_Comm comm, const std::vector<std::vector<grad_view>>& layers)
      : layers_(layers), requests_(layers.size()) {
    MPI_Comm_dup(comm, &comm_);
    for (const auto& grads : layers_) {
      std::vector<host_view> staged;
      for (const auto& g : grads) {
        if (g.size() > static_cast<std::size_t>(INT_MAX))
          fail("gradient reduction: '", g.label(), "' has more than 2^31 elements");
        staged.push_back(stage ? host_view(g.label() + " (host)", g.size()) : host_view());
      }
      host_.push_back(staged);
    }
  }
  ~GradientReducer() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (unwinding() && pending()) {
      // An error on this rank: the others may never join the reductions, so do not wait for
      // them (core/Unwinding.hpp). The communicator is left to the process's end as well.
      keepForAbandonedOperation(std::move(layers_), std::move(host_));
      return;
    }
    finish();
    MPI_Comm_free(&comm_);
  }
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Start summing layer i's gradients (call once its backward is done; order is free, but
  // every rank must start the same layers in the same order, as MPI collectives require).
  void start(std::size_t layer) {
    auto& reqs = requests_.at(layer);
    if (!reqs.empty()) fail("gradient reduction: layer ", layer, " started twice");
    Kokkos::fence();  // gradients complete before MPI (or the staging copy) reads them
    for (std::size_t p = 0; p < layers_[layer].size(); ++p) {
      const grad_view& g = layers_[layer][p];
      T* data = g.data();
      if (stage) {
        Kokkos::deep_copy(host_[layer][p], g);
        data = host_[layer][p].data();
      }
      reqs.emplace_back();
      MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(g.size()), mpiType<T>(), MPI_SUM, comm_,
                     &reqs.back());
    }
  }

  // Wait for every started reduction; afterwards each gradient holds the world sum.
  void finish() {
    ScopedPhase timed(PhaseTimers::global().allreduce);
    for (std::size_t layer = 0; layer < requests_.size(); ++layer) {
      auto& reqs = requests_[layer];
      if (reqs.empty()) continue;
      MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
      reqs.clear();
      if (stage)
        for (std::size_t p = 0; p < layers_[layer].size(); ++p)
          Kokkos::deep_copy(layers_[layer][p], host_[layer][p]);
    }
  }

private:
  bool pending() const {
    for (const auto& reqs : requests_)
      if (!reqs.empty()) return true;
    return false;
  }

  using host_view = Kokkos::View<T*, Kokkos::HostSpace>;
  static constexpr bool stage =
      !HYBRID3D_ENABLE_GPU_AWARE_MPI &&
      !Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible;
  std::vector<std::vector<grad_view>> layers_;
  std::vector<std::vector<host_view>> host_;
  std::vector<std::vector<MPI_Request>> requests_;
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace hybrid3d
