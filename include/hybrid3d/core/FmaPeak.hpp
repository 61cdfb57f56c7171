#pragma once
// The FP32 fused-multiply-add peak of one core, measured: the yardstick the convolution
// benchmarks compare with (targets are fractions of it, measured in the same run, because the
// machines change from one day to the next), and the peak `hybrid3d calibrate` writes into a
// machine file for CPU ranks.
//
// The loop keeps independent accumulator vectors, enough to cover the FMA latency (4 cycles)
// times two FMA ports with room to spare, in the widest vector unit the CPU has (AVX-512 if
// present, else AVX2 + FMA), compiled for that unit whatever flags the project uses, and no more
// than its register file holds: 24 of AVX-512's 32 registers, 12 of AVX2's 16 (24 AVX2 chains
// spill to the stack, and the loads and stores cap the loop at 88 GFLOP/s on a Zen 3 core whose
// 8 to 14 chains run at 103). It runs long enough (about 0.2 s) for the core to settle at the
// clock it holds under vector load.

#include <time.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdio>
#include <string>

namespace hybrid3d {

inline double threadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

#if defined(__x86_64__)
namespace Impl {

// GCC unrolls the chains into registers only when told; nvcc's front end (CUDA builds compile
// this host code through it too) does not know the pragma and would warn.
#if defined(__CUDACC__)
#define HYBRID3D_UNROLL_CHAINS
#else
#define HYBRID3D_UNROLL_CHAINS _Pragma("GCC unroll 24")
#endif

constexpr int avx512Chains = 24;  // + the two operands: 26 of 32 registers
constexpr int avx2Chains = 12;    // + the two operands: 14 of 16 registers

// `iterations` rounds of fmaChains independent vector FMAs (explicit FMA instructions: ISO C++
// mode does not contract a * b + c); returns a value that depends on every accumulator, so the
// compiler keeps all of them.
#define HYBRID3D_FMA_ROUNDS(Vec, set1, fmadd, add, store, lanes, fmaChains)  \
  Vec acc[fmaChains];                                                        \
  HYBRID3D_UNROLL_CHAINS                                                     \
  for (int j = 0; j < fmaChains; ++j) acc[j] = set1(0.001f * float(j));      \
  Vec a = set1(0.999999f);                                                   \
  const Vec b = set1(1e-7f);                                                 \
  for (long i = 0; i < iterations; ++i) {                                    \
    HYBRID3D_UNROLL_CHAINS /* registers, not memory, hold the chains */      \
        for (int j = 0; j < fmaChains; ++j) acc[j] = fmadd(acc[j], a, b);    \
    asm volatile("" : "+x"(a)); /* not hoistable: a may change each round */ \
  }                                                                          \
  Vec sum = set1(0.0f);                                                      \
  HYBRID3D_UNROLL_CHAINS                                                     \
  for (int j = 0; j < fmaChains; ++j) sum = add(sum, acc[j]);                \
  alignas(64) float out[lanes];                                              \
  store(out, sum);                                                           \
  float s = 0;                                                               \
  for (int k = 0; k < lanes; ++k) s += out[k];                               \
  return s;

__attribute__((target("avx512f"))) inline float avx512Rounds(long iterations) {
  HYBRID3D_FMA_ROUNDS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_store_ps, 16,
                      avx512Chains)
}
__attribute__((target("avx2,fma"))) inline float avx2Rounds(long iterations) {
  HYBRID3D_FMA_ROUNDS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_store_ps, 8,
                      avx2Chains)
}
#undef HYBRID3D_FMA_ROUNDS
#undef HYBRID3D_UNROLL_CHAINS

}  // namespace Impl
#endif

struct FmaPeak {
  double gflops = 0;  // FP32 FLOP/s of one core (an FMA counts 2), per CPU second, in 1e9
  std::string unit;   // "AVX-512" or "AVX2"
};

// Best of three runs of about 0.2 s each, per thread CPU second.
inline FmaPeak measureFmaPeak() {
#if defined(__x86_64__)
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !__builtin_cpu_supports("fma")) return {0, "no FMA unit found"};
  const int lanes = avx512 ? 16 : 8;
  const int chains = avx512 ? Impl::avx512Chains : Impl::avx2Chains;
  const long n = 2000000;
  double best = 0;
  volatile float sink = 0;
  for (int rep = 0; rep < 4; ++rep) {  // the first run warms the unit up and is not counted
    const double t0 = threadCpuSeconds();
    sink = sink + (avx512 ? Impl::avx512Rounds(n) : Impl::avx2Rounds(n));
    const double dt = threadCpuSeconds() - t0;
    if (rep > 0) best = std::max(best, 2.0 * lanes * chains * double(n) / dt * 1e-9);
  }
  return {best, avx512 ? "AVX-512" : "AVX2"};
#else
  return {0, "not measured on this architecture"};
#endif
}

}  // namespace hybrid3d
