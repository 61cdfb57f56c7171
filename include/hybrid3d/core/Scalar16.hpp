#pragma once
// The 16-bit storage types of mixed precision (Model/precision bfloat16 and half). Activations,
// their gradients and halo buffers are stored in them; every operation reads them into float,
// computes in float and rounds its result back once, as tensor cores, AVX512-BF16 and oneDNN's
// bf16 primitives do. Parameters stay float (ScalarTraits below).
//
//   bfloat16  float's sign and 8-bit exponent with 7 mantissa bits: float's range, ~3 digits.
//   float16   IEEE 754 binary16 (the deck's "half"): 5-bit exponent, 10 mantissa bits, largest
//             finite 65504, subnormals down to 2^-24; needs loss scaling (train/LossScale.hpp).
//
// Both round to nearest, ties to even, keep NaN a NaN and overflow to infinity, like the
// hardware conversions (F16C's vcvtps2ph, AVX512-BF16's vcvtneps2bf16, CUDA's __float2half_rn)
// and oneDNN's reorders; unit_tests/core/Scalar16Test.cpp checks them against those.
//
// Our own types because Kokkos 3.4 has no bhalf_t and its half_t is plain float on host
// backends: a 16-bit pattern with conversions that compile in any kernel of any backend (no
// intrinsics, no arithmetic operators: code that adds two of them does not compile, so no sum is
// ever accumulated in 16 bits by accident). Vendor libraries (oneDNN, cuDNN) read the same bits.

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

// x >> shift rounded to nearest, ties to even (shift in 1..31).
KOKKOS_INLINE_FUNCTION std::uint32_t shiftRoundEven(std::uint32_t x, int shift) {
  const std::uint32_t kept = x >> shift, rest = x & ((std::uint32_t(1) << shift) - 1);
  const std::uint32_t halfway = std::uint32_t(1) << (shift - 1);
  return kept + ((rest > halfway || (rest == halfway && (kept & 1))) ? 1 : 0);
}

KOKKOS_INLINE_FUNCTION std::uint16_t bfloat16Bits(float f) {
  const std::uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x0040u);  // quiet NaN
  return std::uint16_t(shiftRoundEven(u, 16));  // a carry into the exponent is the right answer
}

KOKKOS_INLINE_FUNCTION float floatFromBfloat16(std::uint16_t b) {
  return floatFromBits(std::uint32_t(b) << 16);
}

KOKKOS_INLINE_FUNCTION std::uint16_t float16Bits(float f) {
  const std::uint32_t u = floatBits(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return std::uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN
  if (a >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u);  // rounds past 65504: infinity
  if (a >= 0x38800000u)                                        // normal: rebias 127 -> 15
    return std::uint16_t(sign | shiftRoundEven(a - 0x38000000u, 13));
  // Subnormal (or zero): the value in units of 2^-24 is the 24-bit significand >> (126 - e).
  const int shift = 126 - int(a >> 23);
  if (shift > 24) return std::uint16_t(sign);  // below 2^-25: zero
  const std::uint32_t significand = (a & 0x7fffffu) | 0x800000u;
  return std::uint16_t(sign | shiftRoundEven(significand, shift));
}

KOKKOS_INLINE_FUNCTION float floatFromFloat16(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return floatFromBits(sign | 0x7f800000u | (m << 13));
  if (e != 0) return floatFromBits(sign | ((e + 112) << 23) | (m << 13));
  const float subnormal = float(m) * 5.9604644775390625e-8f;  // m * 2^-24, exact
  return sign ? -subnormal : subnormal;
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

// What a layer of activation type T keeps its parameters in and computes with: T itself for
// float and double; float for the 16-bit types (master weights, float accumulation).
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

}  // namespace hybrid3d
