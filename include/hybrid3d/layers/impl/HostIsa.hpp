#pragma once
// Host kernels built twice, for the build's target (Debian's GCC: baseline x86-64, SSE2) and for
// AVX2, the copy chosen at run time from the CPU's features, so that one binary runs on any
// x86-64 and uses the wider vectors where they exist. A kernel's row function is a force-inlined
// template; a thin wrapper with HYBRID3D_TARGET_AVX2 instantiates it for AVX2 (GCC and Clang
// compile an inlined callee with the caller's target). Only kernels whose bits cannot depend on
// the instruction set use it: compares and selects (AVX2 has no FMA; "avx2" does not enable
// "fma", so no multiply-add is contracted either).
//
// Off for the device compilers (nvcc, hipcc): their host passes keep the baseline path.

#include <Kokkos_Core.hpp>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__) && \
    !defined(__HIPCC__) && !defined(__SYCL_DEVICE_ONLY__)
#define HYBRID3D_HOST_AVX2 1
#define HYBRID3D_TARGET_AVX2 __attribute__((target("avx2")))
#else
#define HYBRID3D_HOST_AVX2 0
#define HYBRID3D_TARGET_AVX2
#endif

namespace hybrid3d::Impl {

enum class HostIsa { Baseline, Avx2 };

// Avx2 where this CPU has it and the build can target it, else Baseline (asked once).
inline HostIsa bestHostIsa() {
#if HYBRID3D_HOST_AVX2
  static const HostIsa isa = __builtin_cpu_supports("avx2") ? HostIsa::Avx2 : HostIsa::Baseline;
  return isa;
#else
  return HostIsa::Baseline;
#endif
}

}  // namespace hybrid3d::Impl
