#pragma once
/// \file
/// Runs of 16-bit values widened to float and floats narrowed to 16 bits on host memory, with the
/// bits of the one-at-a-time conversions (core/Scalar16.hpp), for row kernels that convert once
/// per chunk of a row and compute on float copies (mapRow, kernels/HostRows.hpp).
///
/// Why: compiled inline into a row kernel, float16's portable conversions are about twenty
/// integer operations per 8 values each way, and half's kernels took 1.5 to 3 times float's
/// time (issue 38). F16C converts 8 values in one instruction (vcvtph2ps, vcvtps2ph). Where F16C
/// and ours differ, NaN, a vector holding one takes the portable conversion: the hardware quiets
/// a signalling NaN and keeps a narrowed NaN's payload; ours keeps a widened NaN's bits and makes
/// every narrowed NaN 0x7e00 with its sign. Rounding: vcvtps2ph's immediate says round to nearest
/// even whatever MXCSR says; it produces half's subnormals (MXCSR's flush-to-zero does not apply
/// to it), as ours do. bfloat16's conversions are the portable ones' integer operations written
/// out for AVX2 (a shift one way; the round-to-even add, a NaN select and a pack the other).
/// unit_tests/core/Scalar16Test.cpp compares every path's bits with the scalar conversions.
///
/// AVX512-BF16's vcvtneps2bf16 is not used: no CPU with it was available to test on, and it
/// flushes subnormal floats to zero, which ours keep.

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/kernels/HostIsa.hpp>

namespace hybrid3d::Impl {

template <class T>
void widenPortable(const T* src, float* dst, Index n) {
  for (Index i = 0; i < n; ++i) dst[i] = float(src[i]);
}

template <class T>
void narrowPortable(const float* src, T* dst, Index n) {
  for (Index i = 0; i < n; ++i) dst[i] = T(src[i]);
}

#if HYBRID3D_HOST_AVX2
inline HYBRID3D_TARGET_AVX2_F16C void widenF16c(const float16* src, float* dst, Index n) {
  Index i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 f = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm256_storeu_ps(dst + i, f);
    if (_mm256_movemask_ps(_mm256_cmp_ps(f, f, _CMP_UNORD_Q))) widenPortable(src + i, dst + i, 8);
  }
  widenPortable(src + i, dst + i, n - i);
}

inline HYBRID3D_TARGET_AVX2_F16C void narrowF16c(const float* src, float16* dst, Index n) {
  Index i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 f = _mm256_loadu_ps(src + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT));
    if (_mm256_movemask_ps(_mm256_cmp_ps(f, f, _CMP_UNORD_Q))) narrowPortable(src + i, dst + i, 8);
  }
  narrowPortable(src + i, dst + i, n - i);
}

inline HYBRID3D_TARGET_AVX2 void widenAvx2(const bfloat16* src, float* dst, Index n) {
  Index i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i h =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_slli_epi32(h, 16));
  }
  widenPortable(src + i, dst + i, n - i);
}

/// bfloat16Bits of 8 floats, each in the low half of its 32-bit lane: (u + 0x7fff + lsb) >> 16,
/// a NaN (u | 0x00400000) >> 16, its quiet bit set.
HYBRID3D_TARGET_AVX2 HYBRID3D_HOST_FORCEINLINE __m256i bfloat16BitsAvx2(__m256 f) {
  const __m256i u = _mm256_castps_si256(f);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
  const __m256i quiet = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
  return _mm256_srli_epi32(_mm256_blendv_epi8(rounded, quiet, nan), 16);
}

inline HYBRID3D_TARGET_AVX2 void narrowAvx2(const float* src, bfloat16* dst, Index n) {
  Index i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = bfloat16BitsAvx2(_mm256_loadu_ps(src + i));
    const __m256i b = bfloat16BitsAvx2(_mm256_loadu_ps(src + i + 8));
    // vpackusdw packs within 128-bit lanes (a0-3 b0-3 a4-7 b4-7): the permute restores order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), packed);
  }
  narrowPortable(src + i, dst + i, n - i);
}
#endif

/// dst[i] := float(src[i]) for i < n, with the instructions of `isa` where it is Avx2 (F16C for
/// float16, which hostHasF16c checks).
template <class T>
void widenRun(HostIsa isa, const T* src, float* dst, Index n) {
#if HYBRID3D_HOST_AVX2
  if constexpr (std::is_same_v<T, float16>) {
    if (isa == HostIsa::Avx2 && hostHasF16c()) return widenF16c(src, dst, n);
  } else if (isa == HostIsa::Avx2) {
    return widenAvx2(src, dst, n);
  }
#else
  (void)isa;
#endif
  widenPortable(src, dst, n);
}

/// dst[i] := T(src[i]) for i < n, as widenRun.
template <class T>
void narrowRun(HostIsa isa, const float* src, T* dst, Index n) {
#if HYBRID3D_HOST_AVX2
  if constexpr (std::is_same_v<T, float16>) {
    if (isa == HostIsa::Avx2 && hostHasF16c()) return narrowF16c(src, dst, n);
  } else if (isa == HostIsa::Avx2) {
    return narrowAvx2(src, dst, n);
  }
#else
  (void)isa;
#endif
  narrowPortable(src, dst, n);
}

}  // namespace hybrid3d::Impl
