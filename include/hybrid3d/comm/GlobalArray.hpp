#pragma once
/// \file
/// Moving a whole (global) NCDHW array in and out of a DistTensor, for tools and tests: the
/// reference checker, decomposition-invariance tests, small exports. Never used in the training
/// path, where no rank ever holds a whole volume.
///
/// A global array is a host View (N, C, D, H, W), LayoutRight, the same on every rank.

#include <climits>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/comm/MpiTypes.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/grid/DistTensor.hpp>

namespace hybrid3d {

template <class T>
using GlobalArray = Kokkos::View<T*****, Kokkos::LayoutRight, Kokkos::HostSpace>;

/// Samples [first, first + count) of a global array (a data-parallel group's share of a batch).
template <class T>
GlobalArray<T> samples(const GlobalArray<T>& a, Index first, Index count) {
  GlobalArray<T> s(a.label(), count, a.extent(1), a.extent(2), a.extent(3), a.extent(4));
  Kokkos::deep_copy(s, Kokkos::subview(a, Kokkos::pair<Index, Index>(first, first + count),
                                       Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL));
  return s;
}

/// Copy this rank's owned box of `global` into t's owned cells (ghosts untouched).
template <class T, class M>
void scatterFromGlobal(const GlobalArray<T>& global, const DistTensor<T, M>& t) {
  const Index3& e = t.globalExtents();
  if (global.extent(0) != std::size_t(t.batch()) || global.extent(1) != std::size_t(t.channels()) ||
      global.extent(2) != std::size_t(e[0]) || global.extent(3) != std::size_t(e[1]) ||
      global.extent(4) != std::size_t(e[2]))
    fail("scatterFromGlobal: global array shape does not match tensor '", t.view().label(), "'");
  const Box3& b = t.owned();
  if (b.empty()) return;
  using P = Kokkos::pair<Index, Index>;
  auto src = Kokkos::subview(global, Kokkos::ALL, Kokkos::ALL, P(b.lo[0], b.hi[0]),
                             P(b.lo[1], b.hi[1]), P(b.lo[2], b.hi[2]));
  // Stage through a contiguous host copy of the owned box, then one deep_copy to the device.
  auto owned = t.ownedView();
  auto hostOwned = Kokkos::create_mirror_view(owned);
  Kokkos::deep_copy(hostOwned, src);
  Kokkos::deep_copy(owned, hostOwned);
}

/// Assemble the whole array on every rank of `comm` (the spatial communicator of t's grid):
/// each rank contributes its owned box.
template <class T, class M>
GlobalArray<T> gatherToGlobal(const DistTensor<T, M>& t, MPI_Comm comm) {
  const Index3& e = t.globalExtents();
  GlobalArray<T> global("global " + t.view().label(), t.batch(), t.channels(), e[0], e[1], e[2]);
  const Box3& b = t.owned();
  if (!b.empty()) {
    using P = Kokkos::pair<Index, Index>;
    auto dst = Kokkos::subview(global, Kokkos::ALL, Kokkos::ALL, P(b.lo[0], b.hi[0]),
                               P(b.lo[1], b.hi[1]), P(b.lo[2], b.hi[2]));
    auto owned = t.ownedView();
    auto hostOwned = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), owned);
    Kokkos::deep_copy(dst, hostOwned);
  }
  // Boxes are disjoint and the rest is zero, so a sum assembles the array.
  if (global.size() > static_cast<std::size_t>(INT_MAX))
    fail("gatherToGlobal: array '", t.view().label(), "' too large for a tool-side gather");
  MPI_Allreduce(MPI_IN_PLACE, global.data(), static_cast<int>(global.size()), mpiType<T>(), MPI_SUM,
                comm);
  return global;
}

}  // namespace hybrid3d
