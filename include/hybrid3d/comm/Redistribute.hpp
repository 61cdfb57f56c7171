#pragma once
/// \file
/// Moves a tensor from one layer layout of a spatial group to another (grid/LayerLayout.hpp,
/// docs/design.md section 11): forward puts the owned cells of every sample where the destination
/// layout owns them; adjoint moves gradients back (backward pass). Planned once, at set-up, by
/// every rank for itself from the two layouts (comm/RedistributePlan.hpp); each call is then
/// one non-blocking neighbourhood collective over the ranks that overlap (a distributed graph
/// of the group, per direction), the cells a rank keeps copied directly while messages fly.
/// Ghost cells are never sent: the destination's own halo fills them.
///
/// Host memory: MPI_Ineighbor_alltoallw with a derived datatype per peer (its blocks as
/// subarrays of the two tensors, comm/impl/PeerBlockTypes.hpp), so MPI moves the cells straight
/// from tensor to tensor: no buffer and no pack or unpack of ours (measured faster than packing,
/// sending and unpacking: docs/performance-notes.md, "Redistribution"). Device memory: pack
/// kernels into a buffer allocated
/// here -> MPI_Ineighbor_alltoallv -> unpack kernels, the buffers staged through pinned host
/// buffers where MPI cannot read the device, as the halo's (core/StagingSpace.hpp). Every rank
/// of the group calls every exchange, holding samples or not.

#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/comm/RedistributePlan.hpp>
#include <hybrid3d/comm/impl/PeerBlockTypes.hpp>
#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/OwnedComm.hpp>
#include <hybrid3d/core/StagingSpace.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/grid/LayerGrid.hpp>
#include <hybrid3d/grid/TensorShape.hpp>

namespace hybrid3d {

/// Packed: whether blocks go through buffers of ours (by default on device memory); a parameter
/// only so that tests run that path on the host too.
template <class T, class MemorySpace = DefaultMemorySpace,
          bool Packed = !Impl::hostAccessible<MemorySpace>>
class Redistribute {
  HYBRID3D_ASSERT_SPACE(MemorySpace);

public:
  using execution_space = typename MemorySpace::execution_space;
  using view_type = Kokkos::View<T*****, Kokkos::LayoutRight, MemorySpace>;
  using buffer_type = Kokkos::View<T*, MemorySpace>;
  using host_buffer_type = StagingBuffer<T, MemorySpace>;
  /// Whether MPI reads and writes the tensors through datatypes (host memory), or buffers are
  /// packed (device memory).
  static constexpr bool byDatatypes = !Packed;

  /// One side of an exchange: a local array [samples, channels, d, h, w] and the global voxel
  /// at its local (0, 0, 0) (a DistTensor's owned box less its low ghosts; a feature matrix
  /// [N, F] viewed as [N, F, 1, 1, 1] at the origin).
  struct Side {
    view_type view;
    Index3 origin{0, 0, 0};
  };
  static Side sideOf(const DistTensor<T, MemorySpace>& t);

  /// `shape`: the group's batch, the channels and the global extents ({1, 1, 1} and
  /// `replicated` for features). Collective over the group (from.groupComm()).
  Redistribute(const LayerGrid& from, const LayerGrid& to, const TensorShape& shape,
               bool replicated, const std::string& name);
  ~Redistribute();
  Redistribute(const Redistribute&) = delete;
  Redistribute& operator=(const Redistribute&) = delete;

  /// y's owned cells := x's (x on `from`, y on `to`).
  void forward(const execution_space& exec, const Side& x, const Side& y) {
    run(exec, forward_, x, y);
  }
  /// dx's owned cells := the adjoint of forward applied to dy's (dy on `to`, dx on `from`).
  void adjoint(const execution_space& exec, const Side& dy, const Side& dx) {
    run(exec, backward_, dy, dx);
  }
  void forward(const execution_space& exec, const DistTensor<T, MemorySpace>& x,
               const DistTensor<T, MemorySpace>& y) {
    forward(exec, sideOf(x), sideOf(y));
  }
  void adjoint(const execution_space& exec, const DistTensor<T, MemorySpace>& dy,
               const DistTensor<T, MemorySpace>& dx) {
    adjoint(exec, sideOf(dy), sideOf(dx));
  }

  const RedistributePlan& plan() const { return forward_.plan; }
  const RedistributePlan& adjointPlan() const { return backward_.plan; }
  /// Bytes this rank sends to other ranks in forward (and in adjoint), and those it keeps.
  Index bytesSent() const { return forward_.sendCount * Index(sizeof(T)); }
  Index adjointBytesSent() const { return backward_.sendCount * Index(sizeof(T)); }
  Index bytesCopied() const { return forward_.copyCount * Index(sizeof(T)); }
  /// Bytes of its buffers (both directions share them; none on host memory), and of their host
  /// staging.
  std::size_t bufferBytes() const {
    return sizeof(T) * (sendBuf_.size() + recvBuf_.size() + sendHost_.size() + recvHost_.size());
  }

private:
  struct Direction {
    RedistributePlan plan;
    OwnedComm comm;  // a distributed graph of the group: senders -> receivers
    std::vector<int> sendCounts, sendOffsets, recvCounts, recvOffsets;
    std::vector<Index> sendAt, recvAt;  // each block's offset in its buffer
    Index sendCount = 0, recvCount = 0, copyCount = 0;
    /// Host memory: one type per peer of each list, one of each, at displacement 0.
    Impl::PeerBlockTypes sendTypes, recvTypes;
    std::vector<int> ones;
    std::vector<MPI_Aint> zeros;
  };
  void setUp(Direction& d, MPI_Comm group);
  void run(const execution_space& exec, Direction& d, const Side& from, const Side& to);
  // The exchange of `run`: started (by datatypes, or packed), and finished.
  void start(const execution_space& exec, Direction& d, const Side& from, const Side& to,
             MPI_Request& request);
  void finish(const execution_space& exec, Direction& d, const Side& to, MPI_Request& request);

  std::string name_, region_;
  int channels_ = 0;
  buffer_type sendBuf_, recvBuf_;
  host_buffer_type sendHost_, recvHost_;
  Direction forward_, backward_;
};

/// The factory in the Cabana style.
template <class T, class MemorySpace = DefaultMemorySpace>
std::unique_ptr<Redistribute<T, MemorySpace>> createRedistribute(const LayerGrid& from,
                                                                 const LayerGrid& to,
                                                                 const TensorShape& shape,
                                                                 bool replicated,
                                                                 const std::string& name) {
  return std::make_unique<Redistribute<T, MemorySpace>>(from, to, shape, replicated, name);
}

}  // namespace hybrid3d

#include <hybrid3d/comm/impl/Redistribute_impl.hpp>

namespace hybrid3d {
#define HYBRID3D_EXTERN(T, D) extern template class Redistribute<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_EXTERN)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_EXTERN)
#undef HYBRID3D_EXTERN
extern template class Redistribute<int, DefaultMemorySpace>;  // segmentation labels
}  // namespace hybrid3d
