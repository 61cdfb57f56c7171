#pragma once
// The redistribution's one kernel: copy a box of all channels of one sample between two strided
// arrays -- a 5-D tensor (one sample of it) or a packed buffer (the box's cells in (c, d, h, w)
// order) on either side. Pack, unpack and the copy of what a rank keeps are this one kernel.
//
// A redistribution moves slabs (whole samples, halves of them), not the thin faces of a halo
// (whose kernel, comm/impl/HaloBox.hpp, is tuned for those): here rows along W are as long as
// the layer is wide, which in the deep layers is 16 voxels or fewer, so the work is split into
// (c, d) planes, each walked row by row with pointers (no index decoded per row), and a plane
// contiguous on both sides (the box as wide and high as both arrays) is one flat loop.
// Devices: a 4-D MDRange over (w, h, d, c), Iterate::Left, so consecutive threads take
// consecutive cells of a row.

#include <string_view>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::Impl {

// Where a box's cells lie in one array: its first cell and the strides (in elements) between
// channels, planes along D and rows along H; cells along W are adjacent.
template <class T>
struct BoxSpan {
  T* first = nullptr;
  Index channel = 0, plane = 0, row = 0;
};

template <class T>
BoxSpan<const T> readOnly(const BoxSpan<T>& s) {
  return {s.first, s.channel, s.plane, s.row};
}

// Sample n of a LayoutRight 5-D view whose local (0, 0, 0) is global voxel `origin`: the cells
// of global box `box`.
template <class View>
BoxSpan<typename View::value_type> boxOf(const View& v, Index n, const Box3& box,
                                         const Index3& origin) {
  BoxSpan<typename View::value_type> s;
  s.first = v.data() + n * Index(v.stride(0)) + (box.lo[0] - origin[0]) * Index(v.stride(2)) +
            (box.lo[1] - origin[1]) * Index(v.stride(3)) + (box.lo[2] - origin[2]);
  s.channel = Index(v.stride(1));
  s.plane = Index(v.stride(2));
  s.row = Index(v.stride(3));
  return s;
}

// A box of extents `ext` packed at `first` in (c, d, h, w) order.
template <class T>
BoxSpan<T> packedBox(T* first, const Index3& ext) {
  return {first, ext[0] * ext[1] * ext[2], ext[1] * ext[2], ext[2]};
}

// to := from over C channels of extents `ext`.
template <class ExecSpace, class T>
void copyBox(std::string_view label, const ExecSpace& exec, const BoxSpan<const T>& from,
             const BoxSpan<T>& to, Index C, const Index3& ext) {
  const Index e0 = ext[0], e1 = ext[1], e2 = ext[2];
  if (C * e0 * e1 * e2 == 0) return;
  const T* src = from.first;
  T* dst = to.first;
  const Index sc = from.channel, sd = from.plane, sh = from.row;
  const Index dc = to.channel, dd = to.plane, dh = to.row;
  constexpr bool host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible;
  if (host) {
    // A plane whose rows follow each other on both sides is one run of e1 * e2 cells.
    const bool flat = sh == e2 && dh == e2;
    const Index rows = flat ? 1 : e1, width = flat ? e1 * e2 : e2;
    Kokkos::parallel_for(
        Impl::kernelLabel(label), rangePolicy(exec, 0, C * e0),
        KOKKOS_LAMBDA(const Index plane) {  // plane: flat (c, z)
          const Index z = plane % e0, c = plane / e0;
          const T* s = src + c * sc + z * sd;
          T* d = dst + c * dc + z * dd;
          for (Index y = 0; y < rows; ++y, s += sh, d += dh)
            for (Index x = 0; x < width; ++x) copyValue(d[x], s[x]);  // 16-bit: see copyValue
        });
  } else {
    using Policy =
        Kokkos::MDRangePolicy<ExecSpace,
                              Kokkos::Rank<4, Kokkos::Iterate::Left, Kokkos::Iterate::Left>,
                              Kokkos::IndexType<Index>>;
    Kokkos::parallel_for(
        Impl::kernelLabel(label), Policy(exec, {0, 0, 0, 0}, {e2, e1, e0, C}),
        KOKKOS_LAMBDA(const Index x, const Index y, const Index z, const Index c) {
          dst[c * dc + z * dd + y * dh + x] = src[c * sc + z * sd + y * sh + x];
        });
  }
}

}  // namespace hybrid3d::Impl
