#pragma once
// Definitions of Redistribute's members (included by Redistribute.hpp; explicit instantiations
// in src/comm/Redistribute.cpp).

#include <climits>
#include <memory>

#include <hybrid3d/comm/MpiTypes.hpp>
#include <hybrid3d/comm/impl/CopyBox.hpp>
#include <hybrid3d/comm/impl/HaloBox.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/PhaseTimers.hpp>
#include <hybrid3d/core/ProfilingRegion.hpp>

namespace hybrid3d {

template <class T, class M>
typename Redistribute<T, M>::Side Redistribute<T, M>::sideOf(const DistTensor<T, M>& t) {
  Side s;
  s.view = t.view();
  for (int i = 0; i < 3; ++i) s.origin[i] = t.owned().lo[i] - t.ghosts().lo[i];
  return s;
}

template <class T, class M>
Redistribute<T, M>::Redistribute(const LayerGrid& from, const LayerGrid& to,
                                 const TensorShape& shape, bool replicated, const std::string& name)
    : name_(name), region_("hybrid3d::Redistribute[" + name + "]"), channels_(shape.channels) {
  if (from.groupComm() != to.groupComm() || from.groupRank() != to.groupRank())
    fail(name, ": redistribution between grids of different spatial groups");
  forward_.plan = planRedistribute(from.layout(), to.layout(), shape.extents, shape.batch,
                                   from.groupRank(), replicated);
  backward_.plan = planRedistribute(to.layout(), from.layout(), shape.extents, shape.batch,
                                    from.groupRank(), replicated);
  setUp(forward_, from.groupComm());
  setUp(backward_, from.groupComm());
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

template <class T, class M>
Redistribute<T, M>::~Redistribute() = default;

template <class T, class M>
void Redistribute<T, M>::setUp(Direction& d, MPI_Comm group) {
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
}

template <class T, class M>
void Redistribute<T, M>::run(const execution_space& exec, const Direction& d, const Side& from,
                             const Side& to) {
  ScopedPhase timed(PhaseTimers::global().redistribute);
  ProfilingRegion region(region_);
  if (from.view.extent(1) != std::size_t(channels_) || to.view.extent(1) != std::size_t(channels_))
    fail(name_, ": redistribution of ", channels_, " channels given ", from.view.extent(1), " and ",
         to.view.extent(1));
  using P = Kokkos::pair<Index, Index>;
  auto sample = [](const view_type& v, Index n) {
    return Kokkos::subview(v, P(n, n + 1), Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL);
  };
  auto local = [](const Side& s, const Box3& b) {
    return Index3{b.lo[0] - s.origin[0], b.lo[1] - s.origin[1], b.lo[2] - s.origin[2]};
  };
  for (std::size_t i = 0; i < d.plan.sends.size(); ++i) {
    const RedistributeBlock& b = d.plan.sends[i];
    Impl::applyBox<Impl::BoxOp::Pack>("hybrid3d::Redistribute::pack", exec,
                                      sample(from.view, b.sample), sendBuf_, d.sendAt[i],
                                      local(from, b.box), b.box.extents());
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
  static const int none = 0;
  auto array = [](const std::vector<int>& v) { return v.empty() ? &none : v.data(); };
  MPI_Request request;
  MPI_Ineighbor_alltoallv(sendPtr, array(d.sendCounts), array(d.sendOffsets), mpiType<T>(), recvPtr,
                          array(d.recvCounts), array(d.recvOffsets), mpiType<T>(), d.comm.get(),
                          &request);
  PhaseTimers::global().redistributeBytes += std::uint64_t(d.sendCount) * sizeof(T);
  // What stays on this rank moves while the messages fly.
  for (const RedistributeBlock& b : d.plan.copies)
    Impl::copyBox("hybrid3d::Redistribute::copy", exec, from.view, b.sample, local(from, b.box),
                  to.view, b.peerSample, local(to, b.box), b.box.extents());
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  if constexpr (mpiStagesThroughHost<M>)
    Kokkos::deep_copy(exec, Kokkos::subview(recvBuf_, P(0, d.recvCount)),
                      Kokkos::subview(recvHost_, P(0, d.recvCount)));
  for (std::size_t i = 0; i < d.plan.recvs.size(); ++i) {
    const RedistributeBlock& b = d.plan.recvs[i];
    Impl::applyBox<Impl::BoxOp::Unpack>("hybrid3d::Redistribute::unpack", exec,
                                        sample(to.view, b.sample), recvBuf_, d.recvAt[i],
                                        local(to, b.box), b.box.extents());
  }
}

}  // namespace hybrid3d
