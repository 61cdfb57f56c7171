#pragma once
// Copies a box of all channels of one sample of a 5-D array into another array (another sample,
// another place): what a redistribution keeps on its own rank moves this way, without packing.
// Host: rows along W, the innermost loop contiguous in both arrays; devices: W innermost in a
// 4-D MDRange over (w, h, d, c), Iterate::Left, so consecutive threads take consecutive cells.

#include <string_view>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::Impl {

// dst(nd, :, dlo + i) := src(ns, :, slo + i) for i in [0, ext), every channel.
template <class ExecSpace, class Src, class Dst>
void copyBox(std::string_view label, const ExecSpace& exec, const Src& src, Index ns,
             const Index3& slo, const Dst& dst, Index nd, const Index3& dlo, const Index3& ext) {
  const Index C = static_cast<Index>(src.extent(1));
  const Index e0 = ext[0], e1 = ext[1], e2 = ext[2];
  if (C * e0 * e1 * e2 == 0) return;
  const Index s0 = slo[0], s1 = slo[1], s2 = slo[2], d0 = dlo[0], d1 = dlo[1], d2 = dlo[2];
  constexpr bool host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible;
  if (host) {
    Kokkos::parallel_for(
        Impl::kernelLabel(label), rangePolicy(exec, 0, C * e0 * e1),
        KOKKOS_LAMBDA(const Index row) {  // row: flat (c, z, y)
          const Index y = row % e1, z = (row / e1) % e0, c = row / (e1 * e0);
          const auto* from = &src(ns, c, s0 + z, s1 + y, s2);
          auto* to = &dst(nd, c, d0 + z, d1 + y, d2);
          for (Index x = 0; x < e2; ++x) to[x] = from[x];
        });
  } else {
    using Policy =
        Kokkos::MDRangePolicy<ExecSpace,
                              Kokkos::Rank<4, Kokkos::Iterate::Left, Kokkos::Iterate::Left>,
                              Kokkos::IndexType<Index>>;
    Kokkos::parallel_for(
        Impl::kernelLabel(label), Policy(exec, {0, 0, 0, 0}, {e2, e1, e0, C}),
        KOKKOS_LAMBDA(const Index x, const Index y, const Index z, const Index c) {
          dst(nd, c, d0 + z, d1 + y, d2 + x) = src(ns, c, s0 + z, s1 + y, s2 + x);
        });
  }
}

}  // namespace hybrid3d::Impl
