#pragma once
/// \file
/// 16-bit rows mapped in registers on AVX2: 16 values loaded (one 32-byte load), widened to two
/// Floats8 (kernels/FloatLanes.hpp), run through the layer's float arithmetic, narrowed and stored
/// (one 32-byte store), with no buffer between; the row's last width % 16 values through the
/// portable conversions (core/Scalar16.hpp). mapRow and its kin (kernels/HostRows.hpp) call these
/// where the CPU has AVX2 and F16C.
///
/// Why: widened into float buffers a chunk at a time (HostConvert.hpp's runs) or converted inline
/// by GCC, the 16-bit element-wise kernels stayed at 0.8 to 2 times float's time for half the
/// bytes (issue 38): the buffers' extra L1 traffic and loops, or GCC's scalar-shaped conversion.
///
/// Bits: bfloat16 widens by a shift (exact) and narrows with bfloat16BitsAvx2, the portable
/// conversion's integer operations. half widens and narrows with F16C; where F16C and the portable
/// conversions differ (NaN: see HostConvert.hpp), the 16 values holding a NaN, read or produced,
/// are redone by the portable code. The arithmetic is float's, lane by lane. So every result has
/// the portable row's bits (unit_tests/core/Scalar16Test.cpp, the layers' 16-bit tests).
///
/// Lane order: bfloat16's 16 values widen with vpunpck{l,h}wd (values 0-3 and 8-11 in the first
/// Floats8, 4-7 and 12-15 in the second), and vpackusdw puts them back in order; half's with
/// vcvtph2ps of each 8. The arithmetic per value does not depend on its lane, only on its values.

#include <cstdint>
#include <type_traits>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/kernels/FloatLanes.hpp>
#include <hybrid3d/kernels/HostConvert.hpp>
#include <hybrid3d/kernels/HostIsa.hpp>

namespace hybrid3d::Impl {

/// Whether rows of T run fused in registers with `isa`: the 16-bit types on AVX2 with F16C.
template <class T>
bool fusedRows(HostIsa isa) {
#if HYBRID3D_HOST_AVX2
  if constexpr (isScalar16<T>) return isa == HostIsa::Avx2 && hostHasF16c();
#endif
  (void)isa;
  return false;
}

/// out[i] := T(op(float(a[i]))) for i < n, the portable conversions (the fused rows' tails).
template <class T, class Op>
HYBRID3D_HOST_FORCEINLINE void mapValues(Index n, const T* a, T* out, const Op& op) {
  for (Index i = 0; i < n; ++i) out[i] = T(op(float(a[i])));
}

template <class T, class Op>
HYBRID3D_HOST_FORCEINLINE void mapValues(Index n, const T* a, const T* b, T* out, const Op& op) {
  for (Index i = 0; i < n; ++i) out[i] = T(op(float(a[i]), float(b[i])));
}

#if HYBRID3D_HOST_AVX2
HYBRID3D_TARGET_AVX2 HYBRID3D_HOST_FORCEINLINE __m256 asM256(const Floats8& x) {
  return (__m256)x.v;
}
HYBRID3D_TARGET_AVX2 HYBRID3D_HOST_FORCEINLINE Floats8 asFloats8(__m256 x) {
  Floats8 r;
  r.v = (FloatVector8)x;
  return r;
}

/// 16 values at p widened into lo and hi (lane order: the file's comment); false where the
/// portable conversion must redo them (never for bfloat16: a shift is exact).
HYBRID3D_TARGET_AVX2 HYBRID3D_HOST_FORCEINLINE bool widen16(const bfloat16* p, Floats8& lo,
                                                            Floats8& hi) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i zero = _mm256_setzero_si256();
  lo = asFloats8(_mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, raw)));
  hi = asFloats8(_mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, raw)));
  return true;
}

/// lo and hi narrowed to 16 values' bits in order, in `bits`; false where the portable
/// conversion must redo them (never for bfloat16: bfloat16BitsAvx2 is the portable arithmetic).
HYBRID3D_TARGET_AVX2 HYBRID3D_HOST_FORCEINLINE bool narrow16(const Floats8& lo, const Floats8& hi,
                                                             bfloat16*, __m256i& bits) {
  bits = _mm256_packus_epi32(bfloat16BitsAvx2(asM256(lo)), bfloat16BitsAvx2(asM256(hi)));
  return true;
}

/// Whether a lane of either is a NaN.
HYBRID3D_TARGET_AVX2 HYBRID3D_HOST_FORCEINLINE bool anyNan(__m256 a, __m256 b) {
  return _mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(a, a, _CMP_UNORD_Q),
                                         _mm256_cmp_ps(b, b, _CMP_UNORD_Q))) != 0;
}

HYBRID3D_TARGET_AVX2_F16C HYBRID3D_HOST_FORCEINLINE bool widen16(const float16* p, Floats8& lo,
                                                                 Floats8& hi) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256 a = _mm256_cvtph_ps(_mm256_castsi256_si128(raw));
  const __m256 b = _mm256_cvtph_ps(_mm256_extracti128_si256(raw, 1));
  lo = asFloats8(a);
  hi = asFloats8(b);
  return !anyNan(a, b);  // F16C quiets a signalling NaN; ours keeps its bits
}

HYBRID3D_TARGET_AVX2_F16C HYBRID3D_HOST_FORCEINLINE bool narrow16(const Floats8& lo,
                                                                  const Floats8& hi, float16*,
                                                                  __m256i& bits) {
  const __m256 a = asM256(lo), b = asM256(hi);
  bits = _mm256_set_m128i(_mm256_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT),
                          _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT));
  return !anyNan(a, b);  // F16C keeps a NaN's payload; ours makes it 0x7e00 with its sign
}

HYBRID3D_TARGET_AVX2 HYBRID3D_HOST_FORCEINLINE void store16(void* p, __m256i bits) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), bits);
}

/// Masks for mapRowFused: which values are kept (the others' bits become 0, those of T(0.0f)),
/// 16 at a time as 16-bit lanes of all ones or zero (lanes(i): values i to i + 15) and one at a
/// time (kept(i)). KeepAll keeps every value (mapRow); KeepArray reads 0 / -1 masks from an array
/// (mapRowKept); Dropout computes its decisions in registers (DropoutKeptLanes,
/// layers/Dropout.hpp).
struct KeepAll {};
struct KeepArray {
  const std::int16_t* keep;
  HYBRID3D_TARGET_AVX2 HYBRID3D_HOST_FORCEINLINE __m256i lanes(Index i) const {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(keep + i));
  }
  HYBRID3D_HOST_FORCEINLINE bool kept(Index i) const { return keep[i] != 0; }
};

/// out[i].bits := 0 where !mask.kept(i), from <= i < to.
template <class T, class Mask>
HYBRID3D_HOST_FORCEINLINE void clearDropped(const Mask& mask, T* out, Index from, Index to) {
  if constexpr (!std::is_same_v<Mask, KeepAll>)
    for (Index j = from; j < to; ++j)
      if (!mask.kept(j)) out[j].bits = 0;
}

/// out[i] := mask.kept(i) ? T(op(float(a[i]))) : T(0) for i < width, fused in registers (the
/// file's comment). Built for AVX2 and F16C for either type (one target: a function inlined into
/// another may not need more of the CPU than it; every CPU with AVX2 has F16C, fusedRows checks
/// both).
template <class T, class Op, class Mask = KeepAll>
HYBRID3D_TARGET_AVX2_F16C void mapRowFused(Index width, const T* a, T* out, const Op& f,
                                           const Mask& m = {}) {
  const Op op = f;  // locals: their captures stay in registers (the stores may alias `f`)
  const Mask mask = m;
  constexpr bool all = std::is_same_v<Mask, KeepAll>;
  Index i = 0;
  for (; i + 16 <= width; i += 16) {
    Floats8 lo, hi;
    __m256i bits;
    if (widen16(a + i, lo, hi) && narrow16(op(lo), op(hi), out, bits)) {
      if constexpr (!all) bits = _mm256_and_si256(bits, mask.lanes(i));
      store16(out + i, bits);
    } else {
      mapValues(16, a + i, out + i, op);
      clearDropped(mask, out, i, i + 16);
    }
  }
  mapValues(width - i, a + i, out + i, op);
  clearDropped(mask, out, i, width);
}

template <class T, class Op>
HYBRID3D_TARGET_AVX2_F16C void mapRowsFused(Index width, const T* a, const T* b, T* out,
                                            const Op& f) {
  const Op op = f;  // a local, as mapRowFused's
  Index i = 0;
  for (; i + 16 <= width; i += 16) {
    Floats8 alo, ahi, blo, bhi;
    __m256i bits;
    const bool exactA = widen16(a + i, alo, ahi);  // both widened, whatever the first says
    const bool exactB = widen16(b + i, blo, bhi);
    const bool exact = exactA && exactB;
    if (exact && narrow16(op(alo, blo), op(ahi, bhi), out, bits))
      store16(out + i, bits);
    else
      mapValues(16, a + i, b + i, out + i, op);
  }
  mapValues(width - i, a + i, b + i, out + i, op);
}

#endif

}  // namespace hybrid3d::Impl
