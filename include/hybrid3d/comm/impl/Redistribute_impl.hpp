#pragma once
// Definitions of Redistribute's members (included by Redistribute.hpp; explicit instantiations
// in src/comm/Redistribute.cpp).

#include <climits>
#include <memory>

#include <hybrid3d/comm/MpiTypes.hpp>
#include <hybrid3d/comm/impl/CopyBox.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/PhaseTimers.hpp>
#include <hybrid3d/core/ProfilingRegion.hpp>

namespace hybrid3d {

template <class T, class M, bool Packed>
typename Redistribute<T, M, Packed>::Side Redistribute<T, M, Packed>::sideOf(
    const DistTensor<T, M>& t) {
  Side s;
  s.view = t.view();
  for (int i = 0; i < 3; ++i) s.origin[i] = t.owned().lo[i] - t.ghosts().lo[i];
  return s;
}

template <class T, class M, bool Packed>
Redistribute<T, M, Packed>::Redistribute(const LayerGrid& from, const LayerGrid& to,
                                         const TensorShape& shape, bool replicated,
                                         const std::string& name)
    : name_(name), region_("hybrid3d::Redistribute[" + name + "]"), channels_(shape.channels) {
  if (from.groupComm() != to.groupComm() || from.groupRank() != to.groupRank())
    fail(name, ": redistribution between grids of different spatial groups");
  forward_.plan = planRedistribute(from.layout(), to.layout(), shape.extents, shape.batch,
                                   from.groupRank(), replicated);
  backward_.plan = planRedistribute(to.layout(), from.layout(), shape.extents, shape.batch,
                                    from.groupRank(), replicated);
  setUp(forward_, from.groupComm());
  setUp(backward_, from.groupComm());
  if constexpr (byDatatypes) return;  // MPI moves the cells between the tensors themselves
  // The directions run one at a time (forward pass, backward pass): one pair of buffers.
  const Index sends = std::max(forward_.sendCount, backward_.sendCount);
  const Index recvs = std::max(forward_.recvCount, backward_.recvCount);
  const std::string send = Impl::viewLabel(name + "/redistribute send");
  const std::string recv = Impl::viewLabel(name + "/redistribute recv");
  sendBuf_ = buffer_type(Kokkos::view_alloc(send, Kokkos::WithoutInitializing), sends);
  recvBuf_ = buffer_type(Kokkos::view_alloc(recv, Kokkos::WithoutInitializing), recvs);
  sendHost_ = stagingBuffer<T, M>(send, std::size_t(sends));
  recvHost_ = stagingBuffer<T, M>(recv, std::size_t(recvs));
}

template <class T, class M, bool Packed>
Redistribute<T, M, Packed>::~Redistribute() = default;

template <class T, class M, bool Packed>
void Redistribute<T, M, Packed>::setUp(Direction& d, MPI_Comm group) {
  const Index perCell = channels_;
  // Per peer: one count and offset in MPI's ints; per block: where it starts in the buffer.
  auto count = [&](const std::vector<RedistributeBlock>& blocks, std::vector<int>& ranks,
                   std::vector<int>& counts, std::vector<int>& offsets, std::vector<Index>& at) {
    Index total = 0;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      if (i == 0 || blocks[i].peer != blocks[i - 1].peer) {
        ranks.push_back(blocks[i].peer);
        counts.push_back(0);
        offsets.push_back(int(total));
      }
      at.push_back(total);
      const Index n = blocks[i].box.size() * perCell;
      if (total + n > INT_MAX)
        fail(name_, ": redistribution message of ", total + n,
             " elements exceeds MPI's int counts");
      counts.back() += int(n);
      total += n;
    }
    return total;
  };
  std::vector<int> sendRanks, recvRanks;
  d.sendCount = count(d.plan.sends, sendRanks, d.sendCounts, d.sendOffsets, d.sendAt);
  d.recvCount = count(d.plan.recvs, recvRanks, d.recvCounts, d.recvOffsets, d.recvAt);
  d.copyCount = cellsOf(d.plan.copies) * perCell;
  int dummy = 0;  // MPI may reject a null array even of length zero
  MPI_Comm graph;
  MPI_Dist_graph_create_adjacent(
      group, int(recvRanks.size()), recvRanks.empty() ? &dummy : recvRanks.data(), MPI_UNWEIGHTED,
      int(sendRanks.size()), sendRanks.empty() ? &dummy : sendRanks.data(), MPI_UNWEIGHTED,
      MPI_INFO_NULL, 0, &graph);
  d.comm = OwnedComm::adopt(graph);
  d.ones.assign(std::max(sendRanks.size(), recvRanks.size()), 1);
  d.zeros.assign(d.ones.size(), 0);
}

namespace Impl {
// The 5-D shape of a side's array, as PeerBlockTypes takes it.
template <class View>
PeerBlockTypes::Shape shapeOf(const View& v) {
  return {Index(v.extent(0)), Index(v.extent(1)), Index(v.extent(2)), Index(v.extent(3)),
          Index(v.extent(4))};
}
}  // namespace Impl

template <class T, class M, bool Packed>
void Redistribute<T, M, Packed>::run(const execution_space& exec, Direction& d, const Side& from,
                                     const Side& to) {
  ScopedPhase timed(PhaseTimers::global().redistribute);
  ProfilingRegion region(region_);
  if (from.view.extent(1) != std::size_t(channels_) || to.view.extent(1) != std::size_t(channels_))
    fail(name_, ": redistribution of ", channels_, " channels given ", from.view.extent(1), " and ",
         to.view.extent(1));
  MPI_Request request;
  start(exec, d, from, to, request);
  PhaseTimers::global().redistributeBytes += std::uint64_t(d.sendCount) * sizeof(T);
  // What stays on this rank moves while the messages fly.
  for (const RedistributeBlock& b : d.plan.copies)
    Impl::copyBox("hybrid3d::Redistribute::copy", exec,
                  Impl::readOnly(Impl::boxOf(from.view, b.sample, b.box, from.origin)),
                  Impl::boxOf(to.view, b.peerSample, b.box, to.origin), Index(channels_),
                  b.box.extents());
  finish(exec, d, to, request);
}

template <class T, class M, bool Packed>
void Redistribute<T, M, Packed>::start(const execution_space& exec, Direction& d, const Side& from,
                                       const Side& to, MPI_Request& request) {
  static const int none = 0;
  auto array = [](const std::vector<int>& v) { return v.empty() ? &none : v.data(); };
  if constexpr (byDatatypes) {
    const auto& sendTypes =
        d.sendTypes.of(d.plan.sends, Impl::shapeOf(from.view), from.origin, mpiType<T>());
    const auto& recvTypes =
        d.recvTypes.of(d.plan.recvs, Impl::shapeOf(to.view), to.origin, mpiType<T>());
    static const MPI_Aint zero = 0;
    static const MPI_Datatype anyType = MPI_BYTE;
    exec.fence();  // the source complete before MPI reads it
    MPI_Ineighbor_alltoallw(
        from.view.data(), array(d.ones), d.zeros.empty() ? &zero : d.zeros.data(),
        sendTypes.empty() ? &anyType : sendTypes.data(), to.view.data(), array(d.ones),
        d.zeros.empty() ? &zero : d.zeros.data(), recvTypes.empty() ? &anyType : recvTypes.data(),
        d.comm.get(), &request);
  } else {
    using P = Kokkos::pair<Index, Index>;
    for (std::size_t i = 0; i < d.plan.sends.size(); ++i) {
      const RedistributeBlock& b = d.plan.sends[i];
      Impl::copyBox("hybrid3d::Redistribute::pack", exec,
                    Impl::readOnly(Impl::boxOf(from.view, b.sample, b.box, from.origin)),
                    Impl::packedBox(sendBuf_.data() + d.sendAt[i], b.box.extents()),
                    Index(channels_), b.box.extents());
    }
    const T* sendPtr = sendBuf_.data();
    T* recvPtr = recvBuf_.data();
    if constexpr (mpiStagesThroughHost<M>) {
      Kokkos::deep_copy(exec, Kokkos::subview(sendHost_, P(0, d.sendCount)),
                        Kokkos::subview(sendBuf_, P(0, d.sendCount)));
      sendPtr = sendHost_.data();
      recvPtr = recvHost_.data();
    }
    exec.fence();  // packed (and staged) data complete before MPI reads them
    MPI_Ineighbor_alltoallv(sendPtr, array(d.sendCounts), array(d.sendOffsets), mpiType<T>(),
                            recvPtr, array(d.recvCounts), array(d.recvOffsets), mpiType<T>(),
                            d.comm.get(), &request);
  }
}

template <class T, class M, bool Packed>
void Redistribute<T, M, Packed>::finish(const execution_space& exec, Direction& d, const Side& to,
                                        MPI_Request& request) {
  if constexpr (byDatatypes) {
    exec.fence();  // the local copies done before MPI's writes are waited for (same tensor)
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  } else {
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    using P = Kokkos::pair<Index, Index>;
    if constexpr (mpiStagesThroughHost<M>)
      Kokkos::deep_copy(exec, Kokkos::subview(recvBuf_, P(0, d.recvCount)),
                        Kokkos::subview(recvHost_, P(0, d.recvCount)));
    for (std::size_t i = 0; i < d.plan.recvs.size(); ++i) {
      const RedistributeBlock& b = d.plan.recvs[i];
      Impl::copyBox("hybrid3d::Redistribute::unpack", exec,
                    Impl::readOnly(Impl::packedBox(recvBuf_.data() + d.recvAt[i], b.box.extents())),
                    Impl::boxOf(to.view, b.sample, b.box, to.origin), Index(channels_),
                    b.box.extents());
    }
  }
}

}  // namespace hybrid3d
