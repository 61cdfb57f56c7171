#pragma once
/// \file
/// AvgPool3d's forward on host memory for a compile-time window: avgPoolForwardRowSums' two
/// passes per row of outputs (the column sums over the window's K x K rows of x, then each
/// output's K columns of those sums) as a row function on restrict pointers, built for the
/// baseline and for AVX2 (HostIsa.hpp), one work item per plane of outputs.
///
/// Why: the forward re-reads each input row about 2.25 times from the caches (K = 3 rows of
/// each of K planes per output row, stride 2) and was bound by those loads and adds, not by
/// memory: software prefetch changed nothing, and it ran well below the copy bandwidth
/// (docs/performance-notes.md, "Pooling").
/// AVX2 does the same adds 8 lanes at a time. The operations and their order are
/// avgPoolForwardRowSums' (adds from 0 in (d, h) order, then in w order, times a * ww), lane by
/// lane, and "avx2" enables no FMA: the same bits on both instruction sets. The 16-bit types
/// sum in float (ComputeOf) and round each output once, as avgPoolForwardRowSums.

#include <algorithm>
#include <limits>
#include <type_traits>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>
#include <hybrid3d/kernels/HostConvert.hpp>
#include <hybrid3d/kernels/HostIsa.hpp>
#include <hybrid3d/kernels/HostRows.hpp>
#include <hybrid3d/kernels/PoolWindow.hpp>

namespace hybrid3d::Impl {

/// One row of `width` outputs: x points at the first output's window start (rowStride and
/// planeStride: x's strides along H and D), `sums` holds S * (width - 1) + K columns, a is the
/// row's (wd * wh) and ww the reciprocal divisors along W.
template <int K, int S, class T, class C>
KOKKOS_FORCEINLINE_FUNCTION void avgPoolRowHost(const T* __restrict x, Index rowStride,
                                                Index planeStride, C* __restrict sums,
                                                T* __restrict y, const C* __restrict ww, C a,
                                                Index width) {
  const Index columns = S * (width - 1) + K;
  for (Index j = 0; j < columns; ++j) {
    C s = 0;
    for (int d = 0; d < K; ++d)
      for (int h = 0; h < K; ++h) s += C(x[d * planeStride + h * rowStride + j]);
    sums[j] = s;
  }
  for (Index xx = 0; xx < width; ++xx) {
    C s = 0;
    for (int w = 0; w < K; ++w) s += sums[S * xx + w];
    y[xx] = T(s * (a * ww[xx]));
  }
}

/// Outputs of a half row per step of avgPoolRow: their windows' float copies stay in L1.
inline constexpr Index kAvgPoolChunk = 128;

#if HYBRID3D_HOST_AVX2
/// 8 values at p widened to float (bfloat16: a shift, exact; half: vcvtph2ps, whose NaN differs
/// from ours only in a signalling NaN's quiet bit, which no sum of it keeps apart: a sum holding a
/// NaN is that quiet NaN, with its sign, and the output's narrowing makes it 0x7e00 with the
/// sign either way).
HYBRID3D_TARGET_AVX2 HYBRID3D_HOST_FORCEINLINE __m256 widen8(const bfloat16* p) {
  const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
}
HYBRID3D_TARGET_AVX2_F16C HYBRID3D_HOST_FORCEINLINE __m256 widen8(const float16* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

/// sums[j + i] := the sum over the window's K x K rows of column j + i, i < 8, from 0 in (d, h)
/// order, as avgPoolRowHost.
template <int K, class T>
HYBRID3D_TARGET_AVX2_F16C HYBRID3D_HOST_FORCEINLINE void columnSums8(const T* xs, Index rowStride,
                                                                     Index planeStride, float* sums,
                                                                     Index j) {
  __m256 sum = _mm256_setzero_ps();
  for (int d = 0; d < K; ++d)
    for (int h = 0; h < K; ++h)
      sum = _mm256_add_ps(sum, widen8(xs + d * planeStride + h * rowStride + j));
  _mm256_storeu_ps(sums + j, sum);
}

/// avgPoolRowHost for the 16-bit types fused in registers (AVX2 and F16C, fusedRows), a chunk of
/// kAvgPoolChunk outputs at a time: the column sums widen each input as they add it (no float
/// copies of the window's rows), the outputs are computed into floats and narrowed by narrowRun.
/// avgPoolRowHost's adds in its order on the same floats, each output rounded once: the same bits.
template <int K, int S, class T>
HYBRID3D_TARGET_AVX2_F16C void avgPoolRowFused(const T* x, Index rowStride, Index planeStride,
                                               float* __restrict sums, T* y,
                                               const float* __restrict ww, float a, Index width) {
  alignas(32) float out[kAvgPoolChunk];
  for (Index first = 0; first < width; first += kAvgPoolChunk) {
    const Index count = std::min(kAvgPoolChunk, width - first);
    const T* const xs = x + S * first;
    const Index columns = S * (count - 1) + K;
    Index j = 0;
    for (; j + 8 <= columns; j += 8) columnSums8<K>(xs, rowStride, planeStride, sums, j);
    // The last columns as one more vector overlapping the previous one (the same sums again):
    // one at a time, half's portable conversions cost as much as the row's vectors at 32x64^3.
    if (j < columns && columns >= 8) {
      columnSums8<K>(xs, rowStride, planeStride, sums, columns - 8);
      j = columns;
    }
    for (; j < columns; ++j) {
      float sum = 0;
      for (int d = 0; d < K; ++d)
        for (int h = 0; h < K; ++h) sum += float(xs[d * planeStride + h * rowStride + j]);
      sums[j] = sum;
    }
    for (Index xx = 0; xx < count; ++xx) {
      float sum = 0;
      for (int w = 0; w < K; ++w) sum += sums[S * xx + w];
      out[xx] = sum * (a * ww[first + xx]);
    }
    narrowRun(HostIsa::Avx2, static_cast<const float*>(out), y + first, count);
  }
}
#endif

/// avgPoolRowHost's row; half's rows kAvgPoolChunk outputs at a time, the window's
/// K x K input rows widened into float buffers first and the outputs narrowed after (widenRun,
/// narrowRun with `Isa`'s instructions: F16C for half, HostConvert.hpp), so that an input read
/// by several windows is converted once per row of outputs. The same adds on the same floats,
/// each output rounded once as before: the same bits.
template <HostIsa Isa, int K, int S, class T, class C>
HYBRID3D_HOST_FORCEINLINE void avgPoolRow(const T* x, Index rowStride, Index planeStride, C* sums,
                                          T* y, const C* ww, C a, Index width) {
#if HYBRID3D_HOST_AVX2
  if constexpr (Isa == HostIsa::Avx2 && isScalar16<T>)
    if (fusedRows<T>(Isa))
      return avgPoolRowFused<K, S>(x, rowStride, planeStride, sums, y, ww, a, width);
#endif
  if constexpr (kRowsThroughFloats<T>) {  // half (HostRows.hpp)
    static_assert(std::is_same_v<C, float>, "half sums in float");
    constexpr Index span = S * (kAvgPoolChunk - 1) + K;  // a buffer row: its inputs
    alignas(32) float in[K * K * span];
    alignas(32) float out[kAvgPoolChunk];
    for (Index first = 0; first < width; first += kAvgPoolChunk) {
      const Index count = std::min(kAvgPoolChunk, width - first);
      for (int d = 0; d < K; ++d)
        for (int h = 0; h < K; ++h)
          widenRun(Isa, x + d * planeStride + h * rowStride + S * first, in + (d * K + h) * span,
                   S * (count - 1) + K);
      avgPoolRowHost<K, S>(static_cast<const float*>(in), span, K * span, sums, out, ww + first, a,
                           count);
      narrowRun(Isa, static_cast<const float*>(out), y + first, count);
    }
  } else {
    avgPoolRowHost<K, S>(x, rowStride, planeStride, sums, y, ww, a, width);
  }
}

template <int K, int S, class T, class C>
void avgPoolRowBaseline(const T* x, Index rowStride, Index planeStride, C* sums, T* y, const C* ww,
                        C a, Index width) {
  avgPoolRow<HostIsa::Baseline, K, S>(x, rowStride, planeStride, sums, y, ww, a, width);
}

#if HYBRID3D_HOST_AVX2
template <int K, int S, class T, class C>
HYBRID3D_TARGET_AVX2 void avgPoolRowAvx2(const T* x, Index rowStride, Index planeStride, C* sums,
                                         T* y, const C* ww, C a, Index width) {
  avgPoolRow<HostIsa::Avx2, K, S>(x, rowStride, planeStride, sums, y, ww, a, width);
}
#endif

/// The forward over `rows` (N x C x the owned output box) with the row function of `isa`; the
/// arguments are avgPoolForwardRowSums'.
template <int K, int S, class ExecSpace, class XView, class YView, class WView>
void avgPoolForwardHost(const ExecSpace& exec, const OwnedRows& rows, const PoolGeometry& g,
                        const Origin3& xo, const GhostOffset& oy, const XView& xv, const YView& yv,
                        const WView& wd, const WView& wh, const WView& ww, HostIsa isa) {
  using T = typename YView::non_const_value_type;
  using C = typename WView::non_const_value_type;  // ComputeOf<T>: the sums' type
  static_assert(K > 0 && S > 0, "avgPoolForwardHost: compile-time windows only");
  static_assert(
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible,
      "avgPoolForwardHost runs on host memory only");
  if (rows.empty()) return;
  if (rows.planes > Index(std::numeric_limits<int>::max()))
    fail("hybrid3d: ", rows.planes, " planes of cells exceed a Kokkos league");
  auto row = &avgPoolRowBaseline<K, S, T, C>;
#if HYBRID3D_HOST_AVX2
  if (isa == HostIsa::Avx2) row = &avgPoolRowAvx2<K, S, T, C>;
#else
  (void)isa;
#endif
  using Policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::IndexType<Index>>;
  using Member = typename Policy::member_type;
  using Scratch =
      Kokkos::View<C*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  const Index bd = g.start(0, g.outLo[0]) - xo.v[0], bh = g.start(1, g.outLo[1]) - xo.v[1],
              bw = g.start(2, g.outLo[2]) - xo.v[2];
  const Index rowStride = Index(xv.stride(3)), planeStride = Index(xv.stride(2));
  const Index columns = S * (rows.width - 1) + K;
  const auto kernel = [=](const Member& team) {
    Index n, c, z;
    rows.decode(team.league_rank(), n, c, z);
    const Scratch sums(team.thread_scratch(0), columns);
    for (Index yy = 0; yy < rows.e1; ++yy)
      row(&xv(n, c, bd + S * z, bh + S * yy, bw), rowStride, planeStride, sums.data(),
          &yv(n, c, oy.d + z, oy.h + yy, oy.w), &ww(0), C(wd(z) * wh(yy)), rows.width);
  };
  Policy policy(exec, rows.planes, 1, 1);
  policy.set_scratch_size(0, Kokkos::PerThread(Scratch::shmem_size(columns)));
  Kokkos::parallel_for(Impl::kernelLabel("hybrid3d::AvgPool3d::forward"), policy, kernel);
}

}  // namespace hybrid3d::Impl
