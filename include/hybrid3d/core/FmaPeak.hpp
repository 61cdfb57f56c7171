#pragma once
/// \file
/// The FP32 fused-multiply-add peak of one core, measured: the yardstick the convolution
/// benchmarks compare with (targets are fractions of it, measured in the same run, because the
/// machines change from one day to the next), and the peak `hybrid3d calibrate` writes into a
/// machine file for CPU ranks; and what the core's 16-bit arithmetic reaches (measure16BitPeaks).
///
/// The loop keeps independent accumulator vectors, enough to cover the FMA latency (4 cycles)
/// times two FMA ports with room to spare, in the widest vector unit the CPU has (AVX-512 if
/// present, else AVX2 + FMA), compiled for that unit whatever flags the project uses, and no more
/// than its register file holds: 24 of AVX-512's 32 registers, 12 of AVX2's 16 (24 AVX2 chains
/// spill to the stack, and the loads and stores cap the loop below what 8 to 14 chains reach:
/// docs/performance-notes.md, "FMA peak").
///
/// One run is sized to take about `runSeconds` (50 ms) of the thread's CPU time, after an
/// untimed warm-up run that also lets the core settle at the clock it holds under vector load;
/// the result is the best of several runs (a run can only be slowed: another process on the
/// core, an interrupt, a clock not yet settled), and every run's rate is kept for the caller to
/// show the spread. The FP32 peak of one calibration once came out at half the one a minute
/// before: a single short run each, one of them disturbed.

#include <time.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace hybrid3d {

inline double threadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

/// The x86 features the 16-bit rates depend on (CPUID leaf 7), false elsewhere. AVX-512 needs
/// the operating system's support too (__builtin_cpu_supports checks XCR0).
struct Cpu16BitFeatures {
  bool avx512bf16 = false;  // vdpbf16ps: bfloat16 pairs multiplied and summed into float
  bool avx512fp16 = false;  // FP16 arithmetic (vfmadd...ph)
  bool amxbf16 = false;     // AMX tiles of bfloat16 (not measured here: needs a kernel's leave)
  bool f16c = false;        // conversions between half and float only
};

inline Cpu16BitFeatures cpu16BitFeatures() {
  Cpu16BitFeatures f;
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx512fp16 = avx512 && (d >> 23 & 1);
    f.amxbf16 = d >> 22 & 1;
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512bf16 = avx512 && (a >> 5 & 1);
  if (__get_cpuid(1, &a, &b, &c, &d)) f.f16c = c >> 29 & 1;
#endif
  return f;
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
// compiler keeps all of them. `Op` and `Vec` may differ (vdpbf16ps multiplies bfloat16 pairs
// into float accumulators).
#define HYBRID3D_FMA_ROUNDS(Vec, Op, init, setA, setB, fmadd, add, store, lanes, fmaChains) \
  Vec acc[fmaChains];                                                                       \
  HYBRID3D_UNROLL_CHAINS                                                                    \
  for (int j = 0; j < fmaChains; ++j) acc[j] = init(0.001f * float(j));                     \
  Op a = setA;                                                                              \
  const Op b = setB;                                                                        \
  for (long i = 0; i < iterations; ++i) {                                                   \
    HYBRID3D_UNROLL_CHAINS /* registers, not memory, hold the chains */                     \
        for (int j = 0; j < fmaChains; ++j) acc[j] = fmadd(acc[j], a, b);                   \
    asm volatile("" : "+x"(a)); /* not hoistable: a may change each round */                \
  }                                                                                         \
  Vec sum = init(0.0f);                                                                     \
  HYBRID3D_UNROLL_CHAINS                                                                    \
  for (int j = 0; j < fmaChains; ++j) sum = add(sum, acc[j]);                               \
  alignas(64) float out[lanes];                                                             \
  store(out, sum);                                                                          \
  float s = 0;                                                                              \
  for (int k = 0; k < lanes; ++k) s += out[k];                                              \
  return s;

__attribute__((target("avx512f"))) inline float avx512Rounds(long iterations) {
  HYBRID3D_FMA_ROUNDS(__m512, __m512, _mm512_set1_ps, _mm512_set1_ps(0.999999f),
                      _mm512_set1_ps(1e-7f), _mm512_fmadd_ps, _mm512_add_ps, _mm512_store_ps, 16,
                      avx512Chains)
}
__attribute__((target("avx2,fma"))) inline float avx2Rounds(long iterations) {
  HYBRID3D_FMA_ROUNDS(__m256, __m256, _mm256_set1_ps, _mm256_set1_ps(0.999999f),
                      _mm256_set1_ps(1e-7f), _mm256_fmadd_ps, _mm256_add_ps, _mm256_store_ps, 8,
                      avx2Chains)
}

// The 16-bit loops need intrinsics the host compiler has (bfloat16: GCC 12, Clang 14; half, whose
// _Float16 Clang takes on x86 from version 16) and nvcc's front end may not: a CUDA build leaves
// them out (its ranks' 16-bit rates are the device's, from --base).
#if !defined(__CUDACC__) && ((defined(__clang__) && __clang_major__ >= 14) || \
                             (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 12))
#define HYBRID3D_HAVE_BF16_LOOP 1
#endif
#if !defined(__CUDACC__) && ((defined(__clang__) && __clang_major__ >= 16) || \
                             (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 12))
#define HYBRID3D_HAVE_HALF_LOOP 1
#endif
#if defined(HYBRID3D_HAVE_BF16_LOOP)
// vdpbf16ps: each of 16 float lanes adds the products of a pair of bfloat16 values (64 FLOP).
__attribute__((target("avx512f,avx512bf16"))) inline float avx512Bf16Rounds(long iterations) {
  HYBRID3D_FMA_ROUNDS(__m512, __m512bh, _mm512_set1_ps,
                      _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.999f), _mm512_set1_ps(0.998f)),
                      _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-7f), _mm512_set1_ps(2e-7f)),
                      _mm512_dpbf16_ps, _mm512_add_ps, _mm512_store_ps, 16, avx512Chains)
}
#endif
#if defined(HYBRID3D_HAVE_HALF_LOOP)
/// vfmadd231ph on 32 half lanes (64 FLOP).
__attribute__((target("avx512f,avx512fp16"))) inline float avx512HalfRounds(long iterations) {
  __m512h acc[avx512Chains];
  HYBRID3D_UNROLL_CHAINS
  for (int j = 0; j < avx512Chains; ++j) acc[j] = _mm512_set1_ph(_Float16(0.001f * float(j)));
  __m512h a = _mm512_set1_ph(_Float16(0.999f));
  const __m512h b = _mm512_set1_ph(_Float16(1e-4f));
  for (long i = 0; i < iterations; ++i) {
    HYBRID3D_UNROLL_CHAINS
    for (int j = 0; j < avx512Chains; ++j) acc[j] = _mm512_fmadd_ph(acc[j], a, b);
    asm volatile("" : "+x"(a));
  }
  __m512h sum = _mm512_set1_ph(_Float16(0.0f));
  HYBRID3D_UNROLL_CHAINS
  for (int j = 0; j < avx512Chains; ++j) sum = _mm512_add_ph(sum, acc[j]);
  alignas(64) _Float16 out[32];
  _mm512_store_ph(out, sum);
  float s = 0;
  for (int k = 0; k < 32; ++k) s += float(out[k]);
  return s;
}
#endif
#undef HYBRID3D_FMA_ROUNDS
#undef HYBRID3D_UNROLL_CHAINS

/// Rates in GFLOP/s per thread CPU second of `runs` timed runs of `rounds(n)` (`flopsPerRound`
/// each), n sized after an untimed warm-up so that a run takes about `runSeconds`.
template <class Rounds>
std::vector<double> timedRuns(Rounds rounds, double flopsPerRound, int runs, double runSeconds) {
  volatile float sink = 0;
  long n = 100000;
  for (;;) {  // warm-up, growing n until one run is long enough to time
    const double t0 = threadCpuSeconds();
    sink = sink + rounds(n);
    const double dt = threadCpuSeconds() - t0;
    if (dt >= 0.2 * runSeconds) {
      n = std::max(1L, long(double(n) * runSeconds / dt));
      break;
    }
    n *= 4;
  }
  std::vector<double> rates;
  for (int r = 0; r < runs; ++r) {
    const double t0 = threadCpuSeconds();
    sink = sink + rounds(n);
    const double dt = threadCpuSeconds() - t0;
    rates.push_back(flopsPerRound * double(n) / dt * 1e-9);
  }
  return rates;
}

}  // namespace Impl
#endif

struct FmaPeak {
  double gflops = 0;  // the best run's FLOP/s (an FMA counts 2) of one core, per CPU second, in 1e9
  std::string unit;   // "AVX-512" or "AVX2"; what was not measured, and why, when gflops is 0
  std::vector<double> runs;  // every timed run's rate, in the order run
};

/// The FP32 peak: the best of `runs` runs of about `runSeconds` each, per thread CPU second.
inline FmaPeak measureFmaPeak(int runs = 7, double runSeconds = 0.05) {
#if defined(__x86_64__)
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !__builtin_cpu_supports("fma")) return {0, "no FMA unit found", {}};
  const int lanes = avx512 ? 16 : 8;
  const int chains = avx512 ? Impl::avx512Chains : Impl::avx2Chains;
  FmaPeak p;
  p.unit = avx512 ? "AVX-512" : "AVX2";
  p.runs = avx512 ? Impl::timedRuns(Impl::avx512Rounds, 2.0 * lanes * chains, runs, runSeconds)
                  : Impl::timedRuns(Impl::avx2Rounds, 2.0 * lanes * chains, runs, runSeconds);
  p.gflops = *std::max_element(p.runs.begin(), p.runs.end());
  return p;
#else
  (void)runs;
  (void)runSeconds;
  return {0, "not measured on this architecture", {}};
#endif
}

/// What one core's arithmetic reaches with 16-bit operands, for bfloat16 and for half.
/// `native` false: the CPU has no such arithmetic, convolutions of that type convert to float and
/// compute in float (gflops = the FP32 peak given, and `how` says so).
struct Peak16 {
  FmaPeak peak;
  bool native = false;
  std::string how;  // one line for the machine file's comment
};

inline Peak16 measureBf16Peak(const FmaPeak& fp32, int runs = 7, double runSeconds = 0.05) {
  Peak16 p;
  const Cpu16BitFeatures f = cpu16BitFeatures();
#if defined(HYBRID3D_HAVE_BF16_LOOP)
  if (f.avx512bf16) {
    p.native = true;
    p.peak.unit = "AVX512-BF16";
    p.peak.runs =
        Impl::timedRuns(Impl::avx512Bf16Rounds, 64.0 * Impl::avx512Chains, runs, runSeconds);
    p.peak.gflops = *std::max_element(p.peak.runs.begin(), p.peak.runs.end());
    p.how = std::string("vdpbf16ps loop (AVX512-BF16), best of ") + std::to_string(runs) + " runs" +
            (f.amxbf16 ? "; the CPU has AMX-BF16 too, not measured: a lower bound" : "");
    return p;
  }
#endif
  (void)runs;
  (void)runSeconds;
  p.peak = fp32;
  p.how =
      std::string(f.avx512bf16
                      ? "AVX512-BF16 present but this build has no loop for it"
                      : "no bfloat16 arithmetic on this CPU (neither AVX512-BF16 nor AMX-BF16)") +
      ": bfloat16 convolutions compute in float, the FP32 peak";
  return p;
}

inline Peak16 measureHalfPeak(const FmaPeak& fp32, int runs = 7, double runSeconds = 0.05) {
  Peak16 p;
  const Cpu16BitFeatures f = cpu16BitFeatures();
#if defined(HYBRID3D_HAVE_HALF_LOOP)
  if (f.avx512fp16) {
    p.native = true;
    p.peak.unit = "AVX512-FP16";
    p.peak.runs =
        Impl::timedRuns(Impl::avx512HalfRounds, 64.0 * Impl::avx512Chains, runs, runSeconds);
    p.peak.gflops = *std::max_element(p.peak.runs.begin(), p.peak.runs.end());
    p.how = "vfmadd231ph loop (AVX512-FP16), best of " + std::to_string(runs) + " runs";
    return p;
  }
#endif
  (void)runs;
  (void)runSeconds;
  p.peak = fp32;
  p.how = std::string(f.avx512fp16 ? "AVX512-FP16 present but this build has no loop for it"
                      : f.f16c     ? "no half arithmetic on this CPU (F16C converts only)"
                                   : "no half arithmetic on this CPU") +
          ": half convolutions compute in float, the FP32 peak";
  return p;
}

}  // namespace hybrid3d
