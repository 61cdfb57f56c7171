#pragma once
// Definitions of Halo's members (included by Halo.hpp; explicit instantiations in src/comm).

#include <climits>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/PhaseTimers.hpp>
#include <hybrid3d/core/ProfilingRegion.hpp>
#include <hybrid3d/core/Unwinding.hpp>

namespace hybrid3d {

namespace Impl {

// MPI wants int counts and displacements, in elements of the exchanged boxes.
inline Index countsFor(const std::vector<HaloBox>& boxes, Index perCell, std::vector<int>& ranks,
                       std::vector<int>& counts, std::vector<int>& offsets,
                       const std::string& name) {
  Index total = 0;
  for (const HaloBox& b : boxes) {
    const Index n = b.box.size() * perCell;
    if (total + n > INT_MAX)
      fail(name, ": halo message of ", total + n, " elements exceeds MPI's int counts");
    ranks.push_back(b.rank);
    counts.push_back(static_cast<int>(n));
    offsets.push_back(static_cast<int>(total));
    total += n;
  }
  return total;
}

}  // namespace Impl

template <class T, class M>
Halo<T, M>::Halo(const LayerGrid& grid, const TensorLayout& layout, const std::string& name)
    : name_(name),
      gatherRegion_("hybrid3d::Halo::gather[" + name + "]"),
      scatterRegion_("hybrid3d::Halo::scatterAdd[" + name + "]"),
      n_(layout.batch),
      c_(layout.channels),
      owned_(layout.owned()),
      ghosts_(layout.ghosts),
      decomposition_(layout.decomposition),
      plan_(planHalo(grid, layout.decomposition, layout.ghostMap, name)) {
  if (layout.coords != grid.coords())
    fail(name, ": tensor coordinates ", toString(layout.coords),
         " are not this rank's grid coordinates ", toString(grid.coords()));
  const Index perCell = static_cast<Index>(n_) * c_;
  std::vector<int> sendRanks, recvRanks;
  sendCount_ = Impl::countsFor(plan_.sends, perCell, sendRanks, sendCounts_, sendOffsets_, name);
  recvCount_ = Impl::countsFor(plan_.recvs, perCell, recvRanks, recvCounts_, recvOffsets_, name);
  if (n_ == 0) return;  // no samples here: nothing to exchange, no communicator

  // MPI may reject a null array even for degree 0; point empty lists at a dummy.
  int dummy = 0;
  int* src = recvRanks.empty() ? &dummy : recvRanks.data();
  int* dst = sendRanks.empty() ? &dummy : sendRanks.data();
  const int nr = static_cast<int>(recvRanks.size()), ns = static_cast<int>(sendRanks.size());
  MPI_Comm graph;
  MPI_Dist_graph_create_adjacent(grid.spatialComm(), nr, src, MPI_UNWEIGHTED, ns, dst,
                                 MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &graph);
  forward_ = OwnedComm::adopt(graph);
  MPI_Dist_graph_create_adjacent(grid.spatialComm(), ns, dst, MPI_UNWEIGHTED, nr, src,
                                 MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &graph);
  reverse_ = OwnedComm::adopt(graph);

  const std::string send = Impl::viewLabel(name + "/halo send");
  const std::string recv = Impl::viewLabel(name + "/halo recv");
  sendBuf_ = buffer_type(Kokkos::view_alloc(send, Kokkos::WithoutInitializing), sendCount_);
  recvBuf_ = buffer_type(Kokkos::view_alloc(recv, Kokkos::WithoutInitializing), recvCount_);
  sendHost_ = stagingBuffer<T, M>(send, std::size_t(sendCount_));
  recvHost_ = stagingBuffer<T, M>(recv, std::size_t(recvCount_));
}

template <class T, class M>
Halo<T, M>::~Halo() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (request_ != MPI_REQUEST_NULL && unwinding()) {
    // An error on this rank: the neighbours may never join, so do not wait (core/Unwinding.hpp).
    keepForAbandonedOperation(std::move(sendBuf_), std::move(recvBuf_), std::move(sendHost_),
                              std::move(recvHost_), std::move(sendCounts_), std::move(sendOffsets_),
                              std::move(recvCounts_), std::move(recvOffsets_), std::move(forward_),
                              std::move(reverse_));
    return;
  }
  if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  // forward_ and reverse_ free their communicators as members, after the wait.
}

template <class T, class M>
void Halo<T, M>::checkLayout(const tensor_type& t) const {
  if (t.batch() != n_ || t.channels() != c_ || t.ghosts() != ghosts_ || !(t.owned() == owned_) ||
      !(t.decomposition() == decomposition_))
    fail(name_, ": tensor '", t.view().label(),
         "' does not have the layout this halo was built for");
}

template <class T, class M>
template <Impl::BoxOp Op>
void Halo<T, M>::applyBoxes(const execution_space& exec, const tensor_type& t,
                            const std::vector<HaloBox>& boxes, const buffer_type& buf,
                            const std::vector<int>& offsets, std::string_view label) {
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const Box3& b = boxes[i].box;
    const Index3 lo{t.localIndex(0, b.lo[0]), t.localIndex(1, b.lo[1]), t.localIndex(2, b.lo[2])};
    Impl::applyBox<Op>(label, exec, t.view(), buf, offsets[i], lo, b.extents());
  }
}

template <class T, class M>
void Halo<T, M>::gatherBegin(const execution_space& exec, const tensor_type& t) {
  ScopedPhase timed(PhaseTimers::global().halo);
  ProfilingRegion region(gatherRegion_);
  checkLayout(t);
  if (zeroPaddingEveryGather_ || t.view().data() != paddingZeroed_) {
    for (const Box3& z : plan_.zeros) {
      const Index3 lo{t.localIndex(0, z.lo[0]), t.localIndex(1, z.lo[1]), t.localIndex(2, z.lo[2])};
      Impl::applyBox<Impl::BoxOp::Zero>("hybrid3d::Halo::zeroPadding", exec, t.view(), sendBuf_, 0,
                                        lo, z.extents());
    }
    paddingZeroed_ = t.view().data();
  }
  applyBoxes<Impl::BoxOp::Pack>(exec, t, plan_.sends, sendBuf_, sendOffsets_,
                                "hybrid3d::Halo::gather::pack");
  exchange(forward_.get(), sendBuf_, sendHost_, sendCounts_, sendOffsets_, recvHost_, recvCounts_,
           recvOffsets_, recvBuf_, exec);
}

template <class T, class M>
void Halo<T, M>::gatherEnd(const execution_space& exec, const tensor_type& t) {
  ScopedPhase timed(PhaseTimers::global().halo);
  ProfilingRegion region(gatherRegion_);
  finishExchange(recvHost_, recvBuf_, exec);
  applyBoxes<Impl::BoxOp::Unpack>(exec, t, plan_.recvs, recvBuf_, recvOffsets_,
                                  "hybrid3d::Halo::gather::unpack");
}

template <class T, class M>
void Halo<T, M>::scatterAddBegin(const execution_space& exec, const tensor_type& t) {
  ScopedPhase timed(PhaseTimers::global().halo);
  ProfilingRegion region(scatterRegion_);
  checkLayout(t);
  // The same boxes travel the other way: ghosts (recv boxes) out, owners (send boxes) in.
  applyBoxes<Impl::BoxOp::Pack>(exec, t, plan_.recvs, recvBuf_, recvOffsets_,
                                "hybrid3d::Halo::scatterAdd::pack");
  exchange(reverse_.get(), recvBuf_, recvHost_, recvCounts_, recvOffsets_, sendHost_, sendCounts_,
           sendOffsets_, sendBuf_, exec);
}

template <class T, class M>
void Halo<T, M>::scatterAddEnd(const execution_space& exec, const tensor_type& t) {
  ScopedPhase timed(PhaseTimers::global().halo);
  ProfilingRegion region(scatterRegion_);
  finishExchange(sendHost_, sendBuf_, exec);
  applyBoxes<Impl::BoxOp::UnpackAdd>(exec, t, plan_.sends, sendBuf_, sendOffsets_,
                                     "hybrid3d::Halo::scatterAdd::unpack");
}

template <class T, class M>
void Halo<T, M>::progress() {
  if (request_ == MPI_REQUEST_NULL) return;
  ScopedPhase timed(PhaseTimers::global().halo);
  int done = 0;
  // MPI_Test frees a completed request and sets it to MPI_REQUEST_NULL, which the Wait in
  // finishExchange then returns from at once.
  MPI_Test(&request_, &done, MPI_STATUS_IGNORE);
}

template <class T, class M>
void Halo<T, M>::exchange(MPI_Comm comm, const buffer_type& from, const host_buffer_type& fromHost,
                          const std::vector<int>& fromCounts, const std::vector<int>& fromOffsets,
                          const host_buffer_type& toHost, const std::vector<int>& toCounts,
                          const std::vector<int>& toOffsets, const buffer_type& to,
                          const execution_space& exec) {
  if (started_) fail(name_, ": halo exchange started twice");
  started_ = true;
  if (n_ == 0) return;  // no samples, no communicator (the constructor)
  // `from` holds exactly what is sent (sized sendCount_ or recvCount_ at set-up).
  PhaseTimers::global().haloBytes += std::uint64_t(from.extent(0)) * sizeof(T);
  const T* sendPtr = from.data();
  T* recvPtr = to.data();
  if constexpr (mpiStagesThroughHost<M>) {
    Kokkos::deep_copy(exec, fromHost, from);  // asynchronous: pinned memory
    sendPtr = fromHost.data();
    recvPtr = toHost.data();
  }
  exec.fence();  // packed (and staged) data must be complete before MPI reads it
  // A rank without neighbours has empty count arrays, whose data() may be null: MPI
  // implementations may reject null arrays even of length zero, so such a rank passes a zero.
  static const int none = 0;
  auto array = [](const std::vector<int>& v) { return v.empty() ? &none : v.data(); };
  MPI_Ineighbor_alltoallv(sendPtr, array(fromCounts), array(fromOffsets), mpiType<T>(), recvPtr,
                          array(toCounts), array(toOffsets), mpiType<T>(), comm, &request_);
}

template <class T, class M>
void Halo<T, M>::finishExchange(const host_buffer_type& toHost, const buffer_type& to,
                                const execution_space& exec) {
  if (!started_) fail(name_, ": halo exchange finished without being started");
  MPI_Wait(&request_, MPI_STATUS_IGNORE);
  started_ = false;
  // Asynchronous on exec, ordered before the unpack kernels; the next exchange fences exec
  // before MPI writes toHost again.
  if constexpr (mpiStagesThroughHost<M>) Kokkos::deep_copy(exec, to, toHost);
}

}  // namespace hybrid3d
