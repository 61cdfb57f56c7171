#pragma once
/// \file
/// The 16-bit storage types of mixed precision (Model/precision bfloat16 and half). Activations,
/// their gradients and halo buffers are stored in them; every operation reads them into float,
/// computes in float and rounds its result back once, as tensor cores, AVX512-BF16 and oneDNN's
/// bf16 primitives do. Parameters stay float (ScalarTraits below).
///
///   bfloat16  float's sign and 8-bit exponent with 7 mantissa bits: float's range, ~3 digits.
///   float16   IEEE 754 binary16 (the deck's "half"): 5-bit exponent, 10 mantissa bits, largest
///             finite 65504, subnormals down to 2^-24; needs loss scaling (train/LossScale.hpp).
///
/// Both round to nearest, ties to even, keep NaN a NaN and overflow to infinity, like the
/// hardware conversions (F16C's vcvtps2ph, AVX512-BF16's vcvtneps2bf16, CUDA's __float2half_rn)
/// and oneDNN's reorders; unit_tests/core/Scalar16Test.cpp checks them against those.
///
/// Our own types because Kokkos 3.4 has no bhalf_t and its half_t is plain float on host
/// backends: a 16-bit pattern with conversions that compile in any kernel of any backend (no
/// intrinsics, no arithmetic operators: code that adds two of them does not compile, so no sum is
/// ever accumulated in 16 bits by accident). Vendor libraries (oneDNN, cuDNN) read the same bits.

#include <cstdint>
#include <type_traits>

#include <Kokkos_Core.hpp>

namespace hybrid3d {

namespace Impl {

KOKKOS_INLINE_FUNCTION std::uint32_t floatBits(float f) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  __builtin_memcpy(&u, &f, sizeof u);
  return u;
#endif
}

KOKKOS_INLINE_FUNCTION float floatFromBits(std::uint32_t u) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __uint_as_float(u);
#else
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// Every conversion below is straight-line code (ternaries the compiler turns into selects, no
// branch on the value), so loops over arrays of them vectorise like float's own loops.

KOKKOS_INLINE_FUNCTION std::uint16_t bfloat16Bits(float f) {
  const std::uint32_t u = floatBits(f);
  const std::uint32_t rounded =
      (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // carry into exponent: right
  const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  return std::uint16_t(nan ? ((u >> 16) | 0x0040u) : rounded);  // NaN stays a (quiet) NaN
}

KOKKOS_INLINE_FUNCTION float floatFromBfloat16(std::uint16_t b) {
  return floatFromBits(std::uint32_t(b) << 16);
}

/// Round to nearest even in three cases computed alike and selected (after F. Giesen's
/// float_to_half_fast3_rtne): overflow and NaN; subnormal results, where adding 0.5 (2^-1) as a
/// float aligns the value's bits to half's subnormal unit 2^-24 and the FPU's own rounding (to
/// nearest even) does the rest; normal results, rebiased with the round-to-even increment.
KOKKOS_INLINE_FUNCTION std::uint16_t float16Bits(float f) {
  const std::uint32_t u = floatBits(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  const std::uint32_t special = a > 0x7f800000u ? 0x7e00u : 0x7c00u;  // NaN, else infinity
  const std::uint32_t magic = 126u << 23;                             // 0.5f
  const std::uint32_t subnormal = floatBits(floatFromBits(a) + floatFromBits(magic)) - magic;
  const std::uint32_t normal = (a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13;  // -(112 << 23) + 0xfff
  const std::uint32_t h = a >= 0x47800000u ? special : a < 0x38800000u ? subnormal : normal;
  return std::uint16_t(sign | h);
}

KOKKOS_INLINE_FUNCTION float floatFromFloat16(std::uint16_t h) {
  const std::uint32_t m = std::uint32_t(h & 0x7fffu) << 13, e = m & 0x0f800000u;
  const std::uint32_t normal = m + (112u << 23);   // rebias 15 -> 127
  const std::uint32_t special = m + (224u << 23);  // infinity or NaN: exponent all ones
  // Zero or subnormal: m * 2^-24 = (2^-14 + m * 2^-24) - 2^-14, both steps exact in float.
  const std::uint32_t subnormal =
      floatBits(floatFromBits(m + (113u << 23)) - floatFromBits(113u << 23));
  const std::uint32_t bits = e == 0x0f800000u ? special : e == 0 ? subnormal : normal;
  return floatFromBits(bits | (std::uint32_t(h & 0x8000u) << 16));
}

}  // namespace Impl

struct bfloat16 {
  std::uint16_t bits;

  bfloat16() = default;  // trivial, like float: Views value-initialise to +0
  KOKKOS_INLINE_FUNCTION bfloat16(float f) : bits(Impl::bfloat16Bits(f)) {}
  KOKKOS_INLINE_FUNCTION operator float() const { return Impl::floatFromBfloat16(bits); }
};

struct float16 {
  std::uint16_t bits;

  float16() = default;
  KOKKOS_INLINE_FUNCTION float16(float f) : bits(Impl::float16Bits(f)) {}
  KOKKOS_INLINE_FUNCTION operator float() const { return Impl::floatFromFloat16(bits); }
};

static_assert(sizeof(bfloat16) == 2 && std::is_trivially_copyable_v<bfloat16>);
static_assert(sizeof(float16) == 2 && std::is_trivially_copyable_v<float16>);

/// What a layer of activation type T keeps its parameters in and computes with: T itself for
/// float and double; float for the 16-bit types (master weights, float accumulation).
template <class T>
struct ScalarTraits {
  using param_type = T;
  using compute_type = T;
};
template <>
struct ScalarTraits<bfloat16> {
  using param_type = float;
  using compute_type = float;
};
template <>
struct ScalarTraits<float16> {
  using param_type = float;
  using compute_type = float;
};

template <class T>
using ParamOf = typename ScalarTraits<T>::param_type;
template <class T>
using ComputeOf = typename ScalarTraits<T>::compute_type;
template <class T>
inline constexpr bool isScalar16 = std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>;

/// dst := src, and dst := pick ? a : b, for loops that move values without converting them
/// (copies, packing, a pool's gather). The 16-bit types go through their bits: GCC copies a
/// struct as an aggregate, and its vectoriser takes no aggregate copy ("more than one data ref
/// in stmt"), so a row of 16-bit copies ran at float's time for half the bytes. The bits are the
/// same either way.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION void copyValue(T& dst, const T& src) {
  if constexpr (isScalar16<T>)
    dst.bits = src.bits;
  else
    dst = src;
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION void selectValue(T& dst, bool pick, const T& a, const T& b) {
  if constexpr (isScalar16<T>)
    dst.bits = pick ? a.bits : b.bits;
  else
    dst = pick ? a : b;
}

}  // namespace hybrid3d
