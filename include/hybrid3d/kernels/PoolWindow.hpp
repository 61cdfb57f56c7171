#pragma once
/// \file
/// The window arithmetic of the pools (MaxPool3d, AvgPool3d) as plain data and functions a
/// kernel can use: the window and owned output box (PoolGeometry), compile-time windows
/// (withStaticWindow, unrolled), backward's inverse window map (OutputRange, PhaseRun) and a
/// tensor's global origin. The layers build these (layers/impl/Pool3d_impl.hpp); the row kernels
/// (kernels/*Pool3d*Host.hpp) and the layers' portable kernels read them.

#include <type_traits>
#include <utility>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/IndexDivision.hpp>
#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/grid/DistTensor.hpp>

namespace hybrid3d::Impl {
KOKKOS_INLINE_FUNCTION Index imax(Index a, Index b) { return a > b ? a : b; }
KOKKOS_INLINE_FUNCTION Index imin(Index a, Index b) { return a < b ? a : b; }

/// The window and the owned output box as plain data a kernel can capture (no std::array).
struct PoolGeometry {
  Index n[3];      // global input extents
  Index outLo[3];  // this rank's owned output box [outLo, outHi), global output indices
  Index outHi[3];
  Index k[3], s[3], p[3];

  /// Output o reads inputs [o*s - p, o*s - p + k), clipped here to the domain [0, n).
  KOKKOS_INLINE_FUNCTION Index start(int dim, Index o) const { return o * s[dim] - p[dim]; }
  KOKKOS_INLINE_FUNCTION Index first(int dim, Index o) const { return imax(start(dim, o), 0); }
  KOKKOS_INLINE_FUNCTION Index last(int dim, Index o) const {
    return imin(start(dim, o) + k[dim], n[dim]);
  }
  /// The owned outputs whose windows contain input i: o*s - p <= i < o*s - p + k.
  KOKKOS_INLINE_FUNCTION Index firstOutput(int dim, Index i) const {
    return imax(ceilDiv(i + p[dim] - k[dim] + 1, s[dim]), outLo[dim]);
  }
  KOKKOS_INLINE_FUNCTION Index lastOutput(int dim, Index i) const {
    return imin(floorDiv(i + p[dim], s[dim]) + 1, outHi[dim]);
  }
  // Position of input (d, h, w) inside the window of output (od, oh, ow): its offsets along D,
  // H and W, 8 bits each (kernels are at most kMaxKernel), so that unpacking is shifts and masks
  // rather than divisions.
  static constexpr int kMaxKernel = 256;
  KOKKOS_INLINE_FUNCTION static int packOffset(Index dd, Index dh, Index dw) {
    return static_cast<int>((dd << 16) | (dh << 8) | dw);
  }
  KOKKOS_INLINE_FUNCTION static Index offsetAlong(int dim, int packed) {
    return (packed >> (8 * (2 - dim))) & 0xff;
  }
  KOKKOS_INLINE_FUNCTION int offset(Index od, Index oh, Index ow, Index d, Index h, Index w) const {
    return packOffset(d - start(0, od), h - start(1, oh), w - start(2, ow));
  }
};

/// f(std::integral_constant<int, I>{}) for I = 0 .. N-1, unrolled: a loop whose bounds depend on
/// I then has compile-time bounds (GCC does not unroll such nests on its own, and vectorises the
/// loop around them only when they are unrolled).
template <class F, int... I>
KOKKOS_INLINE_FUNCTION void unrolledLoop(const F& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, class F>
KOKKOS_INLINE_FUNCTION void unrolled(const F& f) {
  unrolledLoop(f, std::make_integer_sequence<int, N>{});
}
/// The same for host-only code (the pools' *Host.hpp paths). A lambda written in a host function
/// is host-only, and nvcc warns (#20013) when the __host__ __device__ unrolledLoop calls one.
template <class F, int... I>
inline void unrolledOnHostLoop(const F& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, class F>
inline void unrolledOnHost(const F& f) {
  unrolledOnHostLoop(f, std::make_integer_sequence<int, N>{});
}

/// Calls run(K, S) with the window's kernel and stride as std::integral_constant when the window
/// is one the models use (CosmoFlow's average pool 3/2, the max pool 2/2 of MLPerf CosmoFlow and
/// U-Net), else with K = S = 0, meaning "read them from the geometry at run time". With compile-
/// time sizes the window loops unroll and the compiler vectorises a row of outputs along W; a
/// kernel template names them as `K > 0 ? K : g.k[0]`.
template <class Run>
void withStaticWindow(const PoolGeometry& g, Run&& run) {
  auto cubic = [&](Index k, Index s) {
    return g.k[0] == k && g.k[1] == k && g.k[2] == k && g.s[0] == s && g.s[1] == s && g.s[2] == s;
  };
  if (cubic(3, 2))
    run(std::integral_constant<int, 3>{}, std::integral_constant<int, 2>{});
  else if (cubic(2, 2))
    run(std::integral_constant<int, 2>{}, std::integral_constant<int, 2>{});
  else
    run(std::integral_constant<int, 0>{}, std::integral_constant<int, 0>{});
}

/// True when withStaticWindow runs `g`'s window with compile-time sizes.
inline bool hasStaticWindow(const PoolGeometry& g) {
  bool known = false;
  withStaticWindow(g, [&](auto K, auto) { known = decltype(K)::value > 0; });
  return known;
}

/// How many rows of outputs ahead MaxPool3d's host forward asks for its windows' rows (core/
/// Prefetch.hpp): a row of outputs reads K rows in each of K planes, more streams than the
/// hardware prefetcher kept up with. Of none, 1, 2 and 4 rows ahead, 2 was the fastest at
/// 16x128^3; at 32x64^3 none changed anything outside the noise. The same in AvgPool3d's forward
/// changed nothing: it re-reads each input row 2.25 times from the caches and is bound by those
/// loads, not by memory. Figures: docs/performance-notes.md, "Pooling".
inline constexpr Index kPoolPrefetchRows = 2;

/// For each local index of x's layout along one dimension, the owned outputs [first, last) whose
/// windows contain that input (empty for padding cells): backward's inverse window map, built
/// once so that the per-cell kernels do no division.
template <class MemorySpace>
using OutputRange = Kokkos::View<Index* [2], Kokkos::LayoutRight, MemorySpace>;

/// Along W, the inputs of x's local rows that lie in the domain and whose windows all belong to
/// owned outputs, in `groups` groups of s consecutive inputs from local index `first`, where
/// w + p is a multiple of s: group m's inputs are w + p = s * (output + m) + phase, phase < s,
/// and the outputs whose windows hold such an input are output + m + j for j from
/// floorDiv(phase - k, s) + 1 to 0. A kernel with a compile-time window so reads them with
/// unit stride, without the OutputRange tables the other inputs need.
struct PhaseRun {
  Index first = 0, groups = 0, output = 0;
};

/// Global index of a tensor's local array index 0 along each dimension, for kernels that work
/// in global indices: local = global - origin.
struct Origin3 {
  Index v[3];
};
template <class T, class M>
Origin3 originOf(const DistTensor<T, M>& t) {
  const Box3 local = t.localBox();
  return {{local.lo[0], local.lo[1], local.lo[2]}};
}

}  // namespace hybrid3d::Impl
