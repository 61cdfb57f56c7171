#pragma once
/// \file
/// The halo engine every layer uses: fills ghost cells from the neighbours that own them
/// (gather) and sends ghost contributions back to their owners and sums them there
/// (scatterAdd, the adjoint of gather, for the backward pass).
///
/// Built once for a tensor layout (decomposition, ghost widths, N, C): the neighbour lists, a
/// distributed-graph communicator over them in each direction, and the pack/unpack boxes. One
/// exchange is then pack kernels -> one MPI_(I)neighbor_alltoallv -> unpack kernels, with no
/// allocation. Buffers live in the tensor's memory space; where MPI cannot read it (a GPU, and
/// hybrid3d not configured with HYBRID3D_ENABLE_GPU_AWARE_MPI) they are staged through pinned host
/// buffers allocated with the halo (core/StagingSpace.hpp), copied asynchronously on the
/// exchange's execution space instance, which alone is fenced before MPI reads them.

#include <memory>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/OwnedComm.hpp>
#include <hybrid3d/Config.hpp>
#include <hybrid3d/comm/HaloPlan.hpp>
#include <hybrid3d/comm/MpiTypes.hpp>
#include <hybrid3d/comm/impl/HaloBox.hpp>
#include <hybrid3d/core/StagingSpace.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/grid/LayerGrid.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
class Halo {
  HYBRID3D_ASSERT_SPACE(MemorySpace);

public:
  using tensor_type = DistTensor<T, MemorySpace>;
  using execution_space = typename tensor_type::execution_space;
  using buffer_type = Kokkos::View<T*, MemorySpace>;
  using host_buffer_type = StagingBuffer<T, MemorySpace>;  // empty unless MPI needs staging

  /// Collective over grid.spatialComm(). `layout` gives decomposition, ghosts, N and C; any
  /// tensor of that layout can then be exchanged. `name` labels kernels and profile regions.
  /// A layout of no samples (a sub-grid holding none of the group's, a rank in no sub-grid:
  /// grid/LayerLayout.hpp) has nothing to exchange: the halo makes no communicator and its
  /// exchanges do nothing (every rank of a sub-grid holds as many samples as the others).
  Halo(const LayerGrid& grid, const TensorLayout& layout, const std::string& name = "halo");
  Halo(const LayerGrid& grid, const tensor_type& like, const std::string& name = "halo")
      : Halo(grid, like.layout(), name) {}
  ~Halo();
  Halo(const Halo&) = delete;
  Halo& operator=(const Halo&) = delete;

  // Every exchange runs on the execution space instance it is given. The exchanges of one halo
  // must be given the same instance (or be fenced between): the copy out of the staging
  // buffers at the end of one exchange is ordered before the next exchange only on its instance.

  /// Fill every ghost cell: from its owner inside the domain, zero outside.
  void gather(const execution_space& exec, const tensor_type& t) {
    gatherBegin(exec, t);
    gatherEnd(exec, t);
  }
  /// Split form, so a layer can compute its interior while messages fly: Begin zero-fills the
  /// padding, packs and starts the exchange; End waits and unpacks into the ghosts.
  /// The padding (ghosts outside the domain) is zeroed by the first gather of a tensor only,
  /// not per exchange: nothing else writes a gathered tensor's ghost cells (layers write owned
  /// cells, readers write zeros there). A different tensor is zeroed at its first gather.
  void gatherBegin(const execution_space& exec, const tensor_type& t);
  /// every = true: the tensors gathered share their memory with others between gathers (an
  /// inference graph's activations, placed by their lives), so a tensor's padding may hold other
  /// values at any gather: zero it at every gather.
  void setZeroPaddingEveryGather(bool every) { zeroPaddingEveryGather_ = every; }
  void gatherEnd(const execution_space& exec, const tensor_type& t);

  /// Adjoint of gather: add every in-domain ghost cell's value into the owned cell it mirrors
  /// (on whichever rank owns it). Ghost values are left as they were; padding ghosts are
  /// dropped (their adjoint is zero).
  void scatterAdd(const execution_space& exec, const tensor_type& t) {
    scatterAddBegin(exec, t);
    scatterAddEnd(exec, t);
  }
  /// Split form: Begin packs the ghost cells and starts the exchange, so the caller may go on
  /// adding into owned cells (never into ghost cells) until End waits and adds what arrived.
  void scatterAddBegin(const execution_space& exec, const tensor_type& t);
  void scatterAddEnd(const execution_space& exec, const tensor_type& t);

  /// Lets MPI move a started exchange along (MPI_Test): Open MPI progresses non-blocking
  /// collectives only inside MPI calls, so a long computation between Begin and End calls this
  /// now and then. Cheap, and a no-op when nothing is in flight.
  void progress();

  const HaloPlan& plan() const { return plan_; }
  /// Bytes this rank sends (and, by symmetry of the global exchange, the world receives) per
  /// gather; the same travel back in scatterAdd.
  Index bytesSent() const { return sendCount_ * static_cast<Index>(sizeof(T)); }
  Index bytesReceived() const { return recvCount_ * static_cast<Index>(sizeof(T)); }

private:
  void checkLayout(const tensor_type& t) const;
  // Start MPI_Ineighbor_alltoallv on `comm` from `from` (staged through `fromHost` when MPI
  // cannot read device memory) into `to` (or `toHost`); finishExchange waits and unstages.
  void exchange(MPI_Comm comm, const buffer_type& from, const host_buffer_type& fromHost,
                const std::vector<int>& fromCounts, const std::vector<int>& fromOffsets,
                const host_buffer_type& toHost, const std::vector<int>& toCounts,
                const std::vector<int>& toOffsets, const buffer_type& to,
                const execution_space& exec);
  void finishExchange(const host_buffer_type& toHost, const buffer_type& to,
                      const execution_space& exec);
  template <Impl::BoxOp Op>
  void applyBoxes(const execution_space& exec, const tensor_type& t,
                  const std::vector<HaloBox>& boxes, const buffer_type& buf,
                  const std::vector<int>& offsets, std::string_view label);

  std::string name_;
  std::string gatherRegion_, scatterRegion_;  // profile region names, built once
  int n_, c_;
  Box3 owned_;
  GhostWidths ghosts_;
  BlockDecomposition decomposition_;
  HaloPlan plan_;
  OwnedComm forward_;  // owners -> ghosts (distributed graph)
  OwnedComm reverse_;  // ghosts -> owners
  std::vector<int> sendCounts_, sendOffsets_, recvCounts_, recvOffsets_;
  Index sendCount_ = 0, recvCount_ = 0;
  buffer_type sendBuf_, recvBuf_;
  host_buffer_type sendHost_, recvHost_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool started_ = false;  // between exchange and finishExchange (progress may null request_)
  const void* paddingZeroed_ = nullptr;  // the data of the tensor whose padding holds zeros
  bool zeroPaddingEveryGather_ = false;  // see setZeroPaddingEveryGather
};

/// Factories: a ready halo for tensors laid out like `like`, or like `layout`.
template <class T, class MemorySpace>
std::unique_ptr<Halo<T, MemorySpace>> createHalo(const LayerGrid& grid,
                                                 const DistTensor<T, MemorySpace>& like,
                                                 const std::string& name = "halo") {
  return std::make_unique<Halo<T, MemorySpace>>(grid, like.layout(), name);
}
template <class T, class MemorySpace = DefaultMemorySpace>
std::unique_ptr<Halo<T, MemorySpace>> createHalo(const LayerGrid& grid, const TensorLayout& layout,
                                                 const std::string& name = "halo") {
  return std::make_unique<Halo<T, MemorySpace>>(grid, layout, name);
}

}  // namespace hybrid3d

#include <hybrid3d/comm/impl/Halo_impl.hpp>

namespace hybrid3d {
#define HYBRID3D_EXTERN(T, D) extern template class Halo<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_EXTERN)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_EXTERN)
#undef HYBRID3D_EXTERN
}  // namespace hybrid3d
