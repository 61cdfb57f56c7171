#pragma once
// The halo's one kernel: copy a box of a 5-D tensor to or from a flat buffer (pack, unpack,
// unpack-add), or zero it. Halo::gather and scatterAdd run it once per neighbour box; the
// boxes are faces, edges and corners of the owned box, so most are thin along one axis.
//
// A face's cost is the cache lines it touches: a D face is whole rows (contiguous along W), an
// H face rows a whole D plane apart, a W face one cell per row, so one 64-byte line per 4-byte
// cell. The kernels are written so that the memory system, not the loop, sets the pace
// (perf_tests/layers/memory_bound.cpp measures them against a copy of the same bytes).

#include <string_view>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/Prefetch.hpp>

namespace hybrid3d::Impl {

enum class BoxOp { Pack, Unpack, UnpackAdd, Zero };

// What a box kernel does with one cell and buffer slot i. A plain `if` on the compile-time Op,
// not `if constexpr` (nvcc rejects an extended lambda whose first capture of a variable is
// inside an `if constexpr`; kept alike here); the compiler drops the dead branches, so Zero
// never touches the buffer (it is given whichever buffer the halo has, of any size).
template <BoxOp Op, class T, class Buffer>
KOKKOS_FORCEINLINE_FUNCTION void applyCell(T& cell, const Buffer& buf, Index i) {
  if (Op == BoxOp::Pack)
    copyValue(buf(i), cell);  // 16-bit values through their bits: see copyValue
  else if (Op == BoxOp::Unpack)
    copyValue(cell, buf(i));
  else if (Op == BoxOp::UnpackAdd)
    cell = ComputeOf<T>(cell) + ComputeOf<T>(buf(i));  // a 16-bit sum in float, rounded once
  else
    cell = 0;  // BoxOp::Zero
}

// Host: rows of at least this many cells (along W) are a work item each, long enough for the
// inner loop to vectorise; shorter rows (a W face: one cell per row) go by (n, c, d) planes.
inline constexpr Index kHostRowItem = 16;
// Host: a plane of short rows is walked along H this many rows at a time, unrolled into that
// many load (or store) instructions: each is its own strided stream for the hardware
// prefetcher (on a W face 8 and 16 alike, 32 no better; figures: docs/performance-notes.md,
// "Halo packing").
inline constexpr Index kHostRowsAtOnce = 16;
// Host: a box at most this many rows high along H (an H face) goes from one row to the next a
// whole D plane apart, a jump the hardware prefetcher does not follow: each row item asks for
// the next plane's row itself (measured on an H face: docs/performance-notes.md, "Halo
// packing").
inline constexpr Index kHostThinH = 4;

// One kernel over the N x C x box cells of a 5-D view: copy to/from (or add from) a flat buffer
// at `offset`, in (n, c, d, h, w) order, or set them to zero. `lo` is in local array indices.
//
// Host spaces: a 1-D range over work items of whole rows with W innermost (unit stride in the
// view and in the buffer), the item's (n, c, d, h) decoded once per item: a few divisions per
// row or plane, none per cell.
// Devices: a 5-D MDRange with W as index 0 and Iterate::Left, so that consecutive threads of a
// block take consecutive W cells (Kokkos maps threadIdx.x to index 0) and coalesce; when the
// box's rows are short (a W face), a block's threads spread over H too, consecutive in the
// buffer.
template <BoxOp Op, class ExecSpace, class View5, class Buffer>
void applyBox(std::string_view label, const ExecSpace& exec, const View5& v, const Buffer& buf,
              Index offset, const Index3& lo, const Index3& ext) {
  const Index N = static_cast<Index>(v.extent(0)), C = static_cast<Index>(v.extent(1));
  const Index e0 = ext[0], e1 = ext[1], e2 = ext[2];
  const Index l0 = lo[0], l1 = lo[1], l2 = lo[2];
  if (N * C * e0 * e1 * e2 == 0) return;
  constexpr bool host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible;
  if (host && e2 >= kHostRowItem) {
    const bool thinH = e1 <= kHostThinH;
    Kokkos::parallel_for(
        Impl::kernelLabel(label), rangePolicy(exec, 0, N * C * e0 * e1),
        KOKKOS_LAMBDA(const Index row) {  // row: flat (n, c, z, y)
          const Index y = row % e1, z = (row / e1) % e0, nc = row / (e1 * e0);
          const Index n = nc / C, c = nc % C;
          if (thinH && z + 1 < e0) prefetchOnHost(&v(n, c, l0 + z + 1, l1 + y, l2), e2);
          const Index i = offset + row * e2;
          for (Index x = 0; x < e2; ++x) applyCell<Op>(v(n, c, l0 + z, l1 + y, l2 + x), buf, i + x);
        });
  } else if (host) {
    Kokkos::parallel_for(
        Impl::kernelLabel(label), rangePolicy(exec, 0, N * C * e0),
        KOKKOS_LAMBDA(const Index plane) {  // plane: flat (n, c, z)
          const Index z = plane % e0, nc = plane / e0, n = nc / C, c = nc % C;
          const Index i = offset + plane * e1 * e2;
          for (Index x = 0; x < e2; ++x) {
            Index y = 0;
            for (; y + kHostRowsAtOnce <= e1; y += kHostRowsAtOnce)
              for (Index k = 0; k < kHostRowsAtOnce; ++k)
                applyCell<Op>(v(n, c, l0 + z, l1 + y + k, l2 + x), buf, i + (y + k) * e2 + x);
            for (; y < e1; ++y) applyCell<Op>(v(n, c, l0 + z, l1 + y, l2 + x), buf, i + y * e2 + x);
          }
        });
  } else {
    using Policy =
        Kokkos::MDRangePolicy<ExecSpace,
                              Kokkos::Rank<5, Kokkos::Iterate::Left, Kokkos::Iterate::Left>,
                              Kokkos::IndexType<Index>>;
    // A block of up to 256 threads: W first (up to a warp), then H, then D.
    const Index tx = e2 < 32 ? e2 : 32;
    const Index ty = e1 < 256 / tx ? e1 : 256 / tx;
    const Index tz = e0 < 256 / (tx * ty) ? e0 : 256 / (tx * ty);
    Kokkos::parallel_for(
        Impl::kernelLabel(label),
        Policy(exec, {0, 0, 0, 0, 0}, {e2, e1, e0, C, N}, {tx, ty, tz, 1, 1}),
        KOKKOS_LAMBDA(const Index x, const Index y, const Index z, const Index c, const Index n) {
          const Index i = offset + (((n * C + c) * e0 + z) * e1 + y) * e2 + x;
          applyCell<Op>(v(n, c, l0 + z, l1 + y, l2 + x), buf, i);
        });
  }
}

}  // namespace hybrid3d::Impl
