#pragma once
/// \file
/// Host kernels built twice, for the build's target (Debian's GCC: baseline x86-64, SSE2) and for
/// AVX2, the copy chosen at run time from the CPU's features, so that one binary runs on any
/// x86-64 and uses the wider vectors where they exist. A kernel's row function is a force-inlined
/// template; a thin wrapper with HYBRID3D_TARGET_AVX2 instantiates it for AVX2 (GCC and Clang
/// compile an inlined callee with the caller's target). Only kernels whose bits cannot depend on
/// the instruction set use it: compares and selects (AVX2 has no FMA; "avx2" does not enable
/// "fma", so no multiply-add is contracted either).
///
/// Off for the device compilers (nvcc, hipcc): their host passes keep the baseline path.

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Types.hpp>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__) && \
    !defined(__HIPCC__) && !defined(__SYCL_DEVICE_ONLY__)
#define HYBRID3D_HOST_AVX2 1
#define HYBRID3D_TARGET_AVX2 __attribute__((target("avx2")))
// Kernels written with FMA intrinsics (the direct convolution kernels, ConvForwardHost.hpp and
// ConvWeightsHost.hpp): they have no baseline twin, so their bits differ from the engines'
// by float rounding, as one engine's from another's.
#define HYBRID3D_TARGET_AVX2_FMA __attribute__((target("avx2,fma")))
// The 16-bit conversions with F16C (HostConvert.hpp): exact, with their NaN fix-up.
#define HYBRID3D_TARGET_AVX2_F16C __attribute__((target("avx2,f16c")))
#include <cpuid.h>
#include <immintrin.h>
#else
#define HYBRID3D_HOST_AVX2 0
#define HYBRID3D_TARGET_AVX2
#endif

// A host function's body inlined into each caller, so that a wrapper with a target attribute
// compiles it for its instruction set. Not KOKKOS_FORCEINLINE_FUNCTION: under nvcc and hipcc
// that makes the function __host__ __device__, and these call host-only code.
#if defined(__GNUC__) || defined(__clang__)
#define HYBRID3D_HOST_FORCEINLINE inline __attribute__((always_inline))
#else
#define HYBRID3D_HOST_FORCEINLINE inline
#endif

namespace hybrid3d::Impl {

enum class HostIsa { Baseline, Avx2 };

/// Avx2 where this CPU has it and the build can target it, else Baseline (asked once).
inline HostIsa bestHostIsa() {
#if HYBRID3D_HOST_AVX2
  static const HostIsa isa = __builtin_cpu_supports("avx2") ? HostIsa::Avx2 : HostIsa::Baseline;
  return isa;
#else
  return HostIsa::Baseline;
#endif
}

/// Whether this CPU (and build) has AVX2 and FMA, for the intrinsic kernels (asked once).
inline bool hostHasAvx2Fma() {
#if HYBRID3D_HOST_AVX2
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

/// Whether this CPU (and build) has F16C, for float16's conversions (asked once; cpuid leaf 1,
/// ECX bit 29: clang 14 has no __builtin_cpu_supports("f16c")).
inline bool hostHasF16c() {
#if HYBRID3D_HOST_AVX2
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
  }();
  return has;
#else
  return false;
#endif
}

#if HYBRID3D_HOST_AVX2
/// The first `rest` lanes (0 to 8) as a maskload / maskstore mask.
HYBRID3D_TARGET_AVX2_FMA inline __m256i firstLanesMask(Index rest) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(rest)), lane);
}
#endif

}  // namespace hybrid3d::Impl
