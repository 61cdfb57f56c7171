#pragma once
/// \file
/// MaxPool3d's forward on host memory for a compile-time window without padding: one work item
/// per row of outputs, the window's rows as restrict pointers, built for the baseline and for
/// AVX2 (HostIsa.hpp).
///
/// Why: the forward is compute-bound on a host, not memory-bound. PyTorch's rule (a cell wins if
/// it is larger or NaN, so that the first of equal cells wins and NaN propagates) is a compare,
/// an unordered compare, an or and two selects (value and argmax) per window cell; without SSE4.1
/// a select is three instructions (and, andnot, or), and the stride-2 loads need shuffles: about
/// 115 SSE2 instructions per 4 outputs, well below the copy bandwidth at both sizes of
/// bench_memory_bound (docs/performance-notes.md, "Pooling"). AVX2 has 8 lanes, vblendvps
/// (one-instruction select) and vpermd for the strided loads. Only compares and selects: the same
/// bits on every instruction set and as the device form (maxPoolForwardUnpadded). The 16-bit
/// types compare in float and store the winner back, as the device form: their conversions are
/// integer shifts and selects, exact on every instruction set (kernels/HostRows.hpp).

#include <algorithm>
#include <type_traits>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/Prefetch.hpp>
#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>
#include <hybrid3d/kernels/HostConvert.hpp>
#include <hybrid3d/kernels/HostFusedRows.hpp>
#include <hybrid3d/kernels/HostIsa.hpp>
#include <hybrid3d/kernels/HostRows.hpp>
#include <hybrid3d/kernels/PoolWindow.hpp>

namespace hybrid3d::Impl {

/// One row of `width` outputs: x points at the first output's window start, rowStride and
/// planeStride are x's strides along H and D; y and arg the row's outputs (arg null: no winners
/// kept, for an inference layer). `ahead`: the window start of a later row of the same plane
/// (kPoolPrefetchRows on), or null: its K x K rows are asked for first.
template <int K, int S, bool Keep, class T>
KOKKOS_FORCEINLINE_FUNCTION void maxPoolRowHost(const T* __restrict x, const T* ahead,
                                                Index rowStride, Index planeStride, T* __restrict y,
                                                int* __restrict arg, Index width) {
  if (ahead)
    for (int d = 0; d < K; ++d)
      for (int h = 0; h < K; ++h)
        prefetchOnHost(ahead + d * planeStride + h * rowStride, S * (width - 1) + K);
  using C = ComputeOf<T>;  // 16-bit values compare as floats (exactly); the winner is stored back
  for (Index xx = 0; xx < width; ++xx) {
    const T* __restrict w0 = x + S * xx;
    C best = C(w0[0]);
    int at = 0;
    for (int d = 0; d < K; ++d)
      for (int h = 0; h < K; ++h)
        for (int w = 0; w < K; ++w) {
          const C v = C(w0[d * planeStride + h * rowStride + w]);
          const bool take = v > best || v != v;  // v != v: NaN propagates, as in PyTorch
          best = take ? v : best;
          at = take ? PoolGeometry::packOffset(d, h, w) : at;
        }
    y[xx] = T(best);
    if constexpr (Keep) arg[xx] = at;
  }
}

/// Outputs of a half row pooled per step of maxPoolRow: their windows' float copies stay in L1.
inline constexpr Index kMaxPoolChunk = 128;

/// maxPoolRowHost's row; half's rows kMaxPoolChunk outputs at a time, the window's
/// K x K input rows widened into float buffers first and the winners narrowed after (widenRun,
/// narrowRun with `Isa`'s instructions: F16C for half, HostConvert.hpp), each input converted
/// once instead of inside the window's compares. The same compares on the same floats, the
/// winner narrowed as before: the same bits.
template <HostIsa Isa, int K, int S, bool Keep, class T>
HYBRID3D_HOST_FORCEINLINE void maxPoolRow(const T* x, const T* ahead, Index rowStride,
                                          Index planeStride, T* y, int* arg, Index width) {
  if constexpr (kRowsThroughFloats<T>) {                 // half (HostRows.hpp)
    constexpr Index span = S * (kMaxPoolChunk - 1) + K;  // a buffer row: its inputs
    alignas(32) float in[K * K * span];
    alignas(32) float out[kMaxPoolChunk];
    if (ahead)  // the 16-bit rows themselves asked for, as maxPoolRowHost does
      for (int d = 0; d < K; ++d)
        for (int h = 0; h < K; ++h)
          prefetchOnHost(ahead + d * planeStride + h * rowStride, S * (width - 1) + K);
    for (Index first = 0; first < width; first += kMaxPoolChunk) {
      const Index count = std::min(kMaxPoolChunk, width - first);
      for (int d = 0; d < K; ++d)
        for (int h = 0; h < K; ++h)
          widenRun(Isa, x + d * planeStride + h * rowStride + S * first, in + (d * K + h) * span,
                   S * (count - 1) + K);
      maxPoolRowHost<K, S, Keep>(static_cast<const float*>(in), static_cast<const float*>(nullptr),
                                 span, K * span, out, Keep ? arg + first : nullptr, count);
      narrowRun(Isa, static_cast<const float*>(out), y + first, count);
    }
  } else {
    maxPoolRowHost<K, S, Keep>(x, ahead, rowStride, planeStride, y, arg, width);
  }
}

template <int K, int S, bool Keep, class T>
void maxPoolRowBaseline(const T* x, const T* ahead, Index rowStride, Index planeStride, T* y,
                        int* arg, Index width) {
  maxPoolRow<HostIsa::Baseline, K, S, Keep>(x, ahead, rowStride, planeStride, y, arg, width);
}

#if HYBRID3D_HOST_AVX2
template <int K, int S, bool Keep, class T>
HYBRID3D_TARGET_AVX2 void maxPoolRowAvx2(const T* x, const T* ahead, Index rowStride,
                                         Index planeStride, T* y, int* arg, Index width) {
  maxPoolRow<HostIsa::Avx2, K, S, Keep>(x, ahead, rowStride, planeStride, y, arg, width);
}
#endif

#if HYBRID3D_HOST_AVX2
/// Inputs p[0..15] of a 16-bit row as two Floats8-sized vectors: the even ones (each output's
/// w = 0 cell of 2/2/0 windows) and the odd ones (w = 1), lane j holding output j's (lane order
/// for half: see maxPool2RowFused); false where the portable conversion must redo them.
HYBRID3D_TARGET_AVX2 HYBRID3D_HOST_FORCEINLINE bool windowPairs16(const bfloat16* p, __m256& even,
                                                                  __m256& odd) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  even = _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16));  // bfloat16 widens by a shift
  odd = _mm256_castsi256_ps(_mm256_and_si256(raw, _mm256_set1_epi32(int(0xffff0000u))));
  return true;
}
HYBRID3D_TARGET_AVX2_F16C HYBRID3D_HOST_FORCEINLINE bool windowPairs16(const float16* p,
                                                                       __m256& even, __m256& odd) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256 a = _mm256_cvtph_ps(_mm256_castsi256_si128(raw));
  const __m256 b = _mm256_cvtph_ps(_mm256_extracti128_si256(raw, 1));
  even = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));  // outputs 0 1 4 5 | 2 3 6 7
  odd = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
  return !anyNan(a, b);  // F16C quiets a signalling NaN; ours keeps its bits
}

/// 8 winners (inputs, so exact in T unless NaN) narrowed to T's bits in order, in the low half.
HYBRID3D_TARGET_AVX2 HYBRID3D_HOST_FORCEINLINE __m128i winners16(__m256 best, bfloat16*) {
  const __m256i bits = bfloat16BitsAvx2(best);  // NaN quieted as the portable conversion
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(bits, bits), 0x08));
}
HYBRID3D_TARGET_AVX2_F16C HYBRID3D_HOST_FORCEINLINE __m128i winners16(__m256 best, float16*) {
  return _mm256_cvtps_ph(best, _MM_FROUND_TO_NEAREST_INT);  // no NaN here: exact
}

/// MaxPool 2/2/0's row of a 16-bit type fused in registers, 8 outputs a step: each of the four
/// window rows' 16 inputs loaded once and split into the w = 0 and w = 1 cells (bfloat16: a shift
/// and an and; half: vcvtph2ps and two shuffles, undone on the results by vpermq), the 8
/// candidates compared in maxPoolRowHost's order with its rule (larger or NaN wins), the winners
/// narrowed. The same compares on the same floats: the same bits; half's 8 outputs whose inputs
/// hold a NaN, and the row's tail, through maxPoolRowHost. Issue 38: the inline and the buffered
/// conversions left these rows at 0.7 to 1.6 of float's time.
template <bool Keep, class T>
HYBRID3D_TARGET_AVX2_F16C void maxPool2RowFused(const T* x, const T* ahead, Index rowStride,
                                                Index planeStride, T* y, int* arg, Index width) {
  if (ahead)
    for (int d = 0; d < 2; ++d)
      for (int h = 0; h < 2; ++h)
        prefetchOnHost(ahead + d * planeStride + h * rowStride, 2 * (width - 1) + 2);
  Index xx = 0;
  for (; xx + 8 <= width; xx += 8) {
    __m256 best = _mm256_setzero_ps();
    __m256i at = _mm256_setzero_si256();
    bool exact = true;
    for (int d = 0; d < 2; ++d)
      for (int h = 0; h < 2; ++h) {
        __m256 cell[2];
        exact &= windowPairs16(x + d * planeStride + h * rowStride + 2 * xx, cell[0], cell[1]);
        if (d == 0 && h == 0) best = cell[0];  // as maxPoolRowHost: the first cell, offset 0
        for (int w = 0; w < 2; ++w) {
          const __m256 v = cell[w];
          const __m256 take =
              _mm256_or_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
          best = _mm256_blendv_ps(best, v, take);
          at = _mm256_blendv_epi8(at, _mm256_set1_epi32(PoolGeometry::packOffset(d, h, w)),
                                  _mm256_castps_si256(take));
        }
      }
    if (!exact) {
      maxPoolRowHost<2, 2, Keep>(x + 2 * xx, static_cast<const T*>(nullptr), rowStride, planeStride,
                                 y + xx, Keep ? arg + xx : nullptr, 8);
      continue;
    }
    if constexpr (std::is_same_v<T, float16>) {  // lanes held outputs 0 1 4 5 2 3 6 7
      best = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(best), 0xd8));
      at = _mm256_permute4x64_epi64(at, 0xd8);
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + xx), winners16(best, y));
    if constexpr (Keep) _mm256_storeu_si256(reinterpret_cast<__m256i*>(arg + xx), at);
  }
  maxPoolRowHost<2, 2, Keep>(x + 2 * xx, static_cast<const T*>(nullptr), rowStride, planeStride,
                             y + xx, Keep ? arg + xx : nullptr, width - xx);
}
#endif

/// The forward over `rows` (N x C x the owned output box) with the row function of `isa`
/// (Baseline where the build or the CPU lacks AVX2). The arguments are maxPoolForwardUnpadded's.
template <int K, int S, class ExecSpace, class XView, class YView, class ArgView>
void maxPoolForwardHost(const ExecSpace& exec, const OwnedRows& rows, const PoolGeometry& g,
                        const Origin3& xo, const GhostOffset& oy, const XView& xv, const YView& yv,
                        const ArgView& am, HostIsa isa) {
  using T = typename YView::non_const_value_type;
  static_assert(K > 0 && S > 0, "maxPoolForwardHost: compile-time windows only");
  static_assert(
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible,
      "maxPoolForwardHost runs on host memory only");
  if (rows.empty()) return;
  const bool keep = am.data() != nullptr;  // an inference layer keeps no winners
  // Keep is a template argument: a test per output in the row cost bfloat16 a third of its time.
  auto row = keep ? &maxPoolRowBaseline<K, S, true, T> : &maxPoolRowBaseline<K, S, false, T>;
#if HYBRID3D_HOST_AVX2
  if (isa == HostIsa::Avx2)
    row = keep ? &maxPoolRowAvx2<K, S, true, T> : &maxPoolRowAvx2<K, S, false, T>;
  if constexpr (K == 2 && S == 2 && isScalar16<T>)  // 2/2/0, CosmoFlow's and U-Net's
    if (fusedRows<T>(isa)) row = keep ? &maxPool2RowFused<true, T> : &maxPool2RowFused<false, T>;
#else
  (void)isa;
#endif
  const Index bd = g.start(0, g.outLo[0]) - xo.v[0], bh = g.start(1, g.outLo[1]) - xo.v[1],
              bw = g.start(2, g.outLo[2]) - xo.v[2];
  const Index rowStride = Index(xv.stride(3)), planeStride = Index(xv.stride(2));
  const Index e1 = rows.e1;
  Kokkos::parallel_for(Impl::kernelLabel("hybrid3d::MaxPool3d::forward"),
                       rangePolicy(exec, 0, rows.planes * e1), [=](const Index r) {
                         Index n, c, z;
                         rows.decode(r / e1, n, c, z);
                         const Index yy = r % e1;
                         const T* x = &xv(n, c, bd + S * z, bh + S * yy, bw);
                         const T* ahead = yy + kPoolPrefetchRows < e1
                                              ? x + kPoolPrefetchRows * S * rowStride
                                              : nullptr;
                         row(x, ahead, rowStride, planeStride, &yv(n, c, oy.d + z, oy.h + yy, oy.w),
                             keep ? &am(n, c, z, yy, 0) : nullptr, rows.width);
                       });
}

}  // namespace hybrid3d::Impl
