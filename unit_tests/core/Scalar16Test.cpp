// bfloat16 and float16 (core/Scalar16.hpp) convert like the references every vendor path uses:
// the x86 F16C instruction (vcvtps2ph, round to nearest even) where the CPU has it, and
// oneDNN's f32 -> bf16 / f16 reorders; and every 16-bit pattern survives float and back. The
// conversions as the host row kernels run them (kernels/HostRows.hpp: loops compiled for the
// baseline and for AVX2, vectorised; kernels/HostConvert.hpp: runs converted with F16C and AVX2
// intrinsics; kernels/HostFusedRows.hpp: rows mapped in registers) give the one-at-a-time
// conversions' bits.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/Config.hpp>
#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/kernels/HostConvert.hpp>
#include <hybrid3d/kernels/HostRows.hpp>

#if HYBRID3D_ENABLE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace {

using hybrid3d::bfloat16;
using hybrid3d::float16;

float fromBits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

bool isNan16(std::uint16_t bits, int exponentBits) {
  const int mantissaBits = 15 - exponentBits;
  const std::uint16_t exponent = std::uint16_t(((1u << exponentBits) - 1) << mantissaBits);
  return (bits & exponent) == exponent && (bits & ((1u << mantissaBits) - 1)) != 0;
}

// Floats that exercise every rounding case: random bit patterns of every exponent (normals,
// subnormals, the overflow edge), exact halfway points between 16-bit neighbours, specials.
std::vector<float> probeFloats() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          65504.0f,
                          65519.99f,
                          65520.0f,
                          1e-8f,
                          5.9604645e-8f,
                          2.9802322e-8f,
                          2.9802326e-8f,
                          6.1035156e-5f,
                          3.3895314e38f,
                          3.4028235e38f,
                          INFINITY,
                          -INFINITY,
                          NAN};
  std::mt19937 rng(7);
  for (int i = 0; i < 400000; ++i) v.push_back(fromBits(rng()));
  for (std::uint32_t h = 0; h < 0x7c00u; h += 7) {  // halfway between half h and h + 1
    const float a = hybrid3d::Impl::floatFromFloat16(std::uint16_t(h));
    const float b = hybrid3d::Impl::floatFromFloat16(std::uint16_t(h + 1));
    v.push_back(0.5f * (a + b));
    v.push_back(-0.5f * (a + b));
  }
  for (std::uint32_t b = 0; b < 0x7f80u; b += 5)  // halfway between bfloat16 b and b + 1
    v.push_back(fromBits((b << 16) | 0x8000u));
  return v;
}

TEST(Scalar16, EveryPatternSurvivesFloatAndBack) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const std::uint16_t bits = std::uint16_t(b);
    bfloat16 x;
    x.bits = bits;
    float16 y;
    y.bits = bits;
    const bfloat16 bx = float(x);
    const float16 by = float(y);
    if (isNan16(bits, 8))
      EXPECT_TRUE(std::isnan(float(x)) && isNan16(bx.bits, 8)) << b;
    else
      EXPECT_EQ(bx.bits, bits) << b;
    if (isNan16(bits, 5))
      EXPECT_TRUE(std::isnan(float(y)) && isNan16(by.bits, 5)) << b;
    else
      EXPECT_EQ(by.bits, bits) << b;
  }
}

TEST(Scalar16, Float16ValuesAreIeeeBinary16) {
  EXPECT_EQ(float(float16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(float(float16(65520.0f))));        // halfway to 2^16 rounds up (even)
  EXPECT_EQ(float(float16(5.9604645e-8f)), 5.9604645e-8f);  // the smallest subnormal, 2^-24
  EXPECT_EQ(float(float16(2.9802322e-8f)), 0.0f);           // 2^-25: halfway, to even (zero)
  EXPECT_EQ(float(bfloat16(1.00390625f)), 1.0f);            // 1 + 2^-8: halfway, to even
  EXPECT_EQ(float(bfloat16(1.01171875f)), 1.015625f);       // 1 + 3 * 2^-8: to even, up
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("f16c"))) std::uint16_t hardwareHalf(float f) {
  return std::uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float hardwareFloat(std::uint16_t h) { return _cvtsh_ss(h); }

TEST(Scalar16, Float16MatchesTheF16cInstruction) {
  unsigned a = 0, b = 0, c = 0, d = 0;  // cpuid leaf 1, ECX bit 29: F16C (clang 14 has no
  // __builtin_cpu_supports("f16c"))
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 29))) GTEST_SKIP() << "this CPU has no F16C";
  for (float f : probeFloats()) {
    const std::uint16_t ours = float16(f).bits, hardware = hardwareHalf(f);
    if (std::isnan(f))
      EXPECT_TRUE(isNan16(ours, 5) && isNan16(hardware, 5));
    else
      ASSERT_EQ(ours, hardware) << f;
  }
  for (std::uint32_t b = 0; b < 65536; ++b) {
    float16 y;
    y.bits = std::uint16_t(b);
    if (!isNan16(y.bits, 5)) ASSERT_EQ(float(y), hardwareFloat(y.bits)) << b;
  }
}
#endif

// One value at a time, out of line: the scalar conversions the vectorised rows must match.
template <class T>
[[gnu::noinline]] std::uint32_t scalarWidened(std::uint16_t bits) {
  T t;
  t.bits = bits;
  const float f = t;
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
template <class T>
[[gnu::noinline]] std::uint16_t scalarNarrowed(float f) {
  return T(f).bits;
}

// Row y of `rows` rows of `width` values, converted the way a row kernel converts: T -> float
// (widen) and float -> T (narrow), each row one call of hostRowFunction's build for `isa`.
template <class T>
void convertRows(hybrid3d::Impl::HostIsa isa, const T* from16, float* toFloat, const float* from,
                 T* to16, hybrid3d::Index rows, hybrid3d::Index width) {
  using hybrid3d::Index;
  const auto row = [=](Index, Index, Index, const Index y) HYBRID3D_HOST_INLINE_LAMBDA {
    const T* a = from16 + y * width;
    float* b = toFloat + y * width;
    const float* c = from + y * width;
    T* d = to16 + y * width;
    for (Index x = 0; x < width; ++x) b[x] = float(a[x]);
    for (Index x = 0; x < width; ++x) d[x] = T(c[x]);
  };
  const auto run = hybrid3d::Impl::hostRowFunction<decltype(row)>(isa);
  for (Index y = 0; y < rows; ++y) run(row, 0, 0, 0, y);
}

template <class T>
void expectRowsConvertLikeScalars() {
  using hybrid3d::Impl::HostIsa;
  std::vector<float> floats = probeFloats();
  floats.resize(floats.size() / 256 * 256);  // whole rows of 256
  const hybrid3d::Index width = 256, rows = hybrid3d::Index(floats.size()) / width;
  std::vector<T> patterns(floats.size());
  for (std::size_t i = 0; i < patterns.size(); ++i) patterns[i].bits = std::uint16_t(i);
  for (const HostIsa isa : {HostIsa::Baseline, HostIsa::Avx2}) {
    if (isa == HostIsa::Avx2 && hybrid3d::Impl::bestHostIsa() != HostIsa::Avx2) continue;
    SCOPED_TRACE(isa == HostIsa::Avx2 ? "AVX2" : "baseline");
    std::vector<float> widened(floats.size());
    std::vector<T> narrowed(floats.size());
    convertRows(isa, patterns.data(), widened.data(), floats.data(), narrowed.data(), rows, width);
    for (std::size_t i = 0; i < floats.size(); ++i) {
      std::uint32_t w;
      std::memcpy(&w, &widened[i], sizeof w);
      if (i < 65536) ASSERT_EQ(w, scalarWidened<T>(patterns[i].bits)) << "pattern " << i;
      ASSERT_EQ(narrowed[i].bits, scalarNarrowed<T>(floats[i])) << "float " << floats[i];
    }
  }
}

TEST(Scalar16, VectorisedRowsConvertLikeTheScalarConversions) {
  ASSERT_GE(probeFloats().size(), 65536u);  // every 16-bit pattern gets widened
  expectRowsConvertLikeScalars<bfloat16>();
  expectRowsConvertLikeScalars<float16>();
}

// Runs of every length from 0 to 40 at every offset into the buffers (the vector bodies and
// their tails), then all of `floats` and all 16-bit patterns at once: widenRun and narrowRun of
// `isa` give the scalar conversions' bits. NaNs of every payload sit among the random patterns.
template <class T>
void expectRunsConvertLikeScalars(hybrid3d::Impl::HostIsa isa) {
  using hybrid3d::Index;
  const std::vector<float> floats = probeFloats();
  std::vector<T> patterns(65536);
  for (std::size_t i = 0; i < patterns.size(); ++i) patterns[i].bits = std::uint16_t(i * 40503u);
  const auto check = [&](Index offset, Index n) {
    std::vector<float> widened(std::size_t(n + 1), -1.0f);
    std::vector<T> narrowed(std::size_t(n + 1));
    for (T& t : narrowed) t.bits = 0x1234;
    hybrid3d::Impl::widenRun(isa, patterns.data() + offset, widened.data(), n);
    hybrid3d::Impl::narrowRun(isa, floats.data() + offset, narrowed.data(), n);
    for (Index i = 0; i < n; ++i) {
      std::uint32_t w;
      std::memcpy(&w, &widened[i], sizeof w);
      ASSERT_EQ(w, scalarWidened<T>(patterns[offset + i].bits)) << "pattern at " << offset + i;
      ASSERT_EQ(narrowed[i].bits, scalarNarrowed<T>(floats[offset + i])) << floats[offset + i];
    }
    ASSERT_EQ(widened[n], -1.0f) << "wrote past " << n;  // nothing written past the run
    ASSERT_EQ(narrowed[n].bits, 0x1234) << "wrote past " << n;
  };
  for (Index n = 0; n <= 40; ++n)
    for (Index offset = 0; offset < 16; ++offset) check(offset, n);
  check(0, Index(patterns.size()));
  check(5, Index(patterns.size()) - 5);
}

TEST(Scalar16, ConvertedRunsHaveTheScalarConversionsBits) {
  using hybrid3d::Impl::HostIsa;
  ASSERT_GE(probeFloats().size(), 65536u);
  for (const HostIsa isa : {HostIsa::Baseline, HostIsa::Avx2}) {
    if (isa == HostIsa::Avx2 && hybrid3d::Impl::bestHostIsa() != HostIsa::Avx2) continue;
    SCOPED_TRACE(isa == HostIsa::Avx2 ? "AVX2" : "baseline");
    expectRunsConvertLikeScalars<bfloat16>(isa);
    expectRunsConvertLikeScalars<float16>(isa);
  }
  if (hybrid3d::Impl::bestHostIsa() == HostIsa::Avx2 && !hybrid3d::Impl::hostHasF16c())
    std::printf("[ note ] this CPU has AVX2 without F16C: half's runs were the portable ones\n");
}

// The rows fused in registers (kernels/HostFusedRows.hpp: 16 values widened, mapped on eight
// float lanes, narrowed, no buffer) give the one-value-at-a-time conversions' bits around the same
// float arithmetic, computed here out of line: every 16-bit pattern as input (NaNs of every
// payload, infinities, subnormals), ops that overflow, underflow to subnormals and propagate NaN,
// rows of every length 0 to 40 at offsets 0 to 15 (the 16-value bodies and the tails), in place
// and not, one input and two, Dropout's masks (mapRowKept). Skipped where the CPU lacks AVX2 or
// F16C (the rows are then the portable ones, which ConvertedRunsHaveTheScalarConversionsBits
// covers).
struct FusedRowOps {
  float slope = 0.01f, scale = 1.25e4f, m = 0.375f, s = 2.5f, a = -1.5f, b = 3.0e-39f;
  template <class V>
  V leaky(const V& v) const {
    return hybrid3d::Impl::select(v > V(0), v, V(slope) * v);
  }
  template <class V>
  V normalize(const V& v) const {
    return (v - m) * s * a + b;
  }
  template <class V>
  V scaled(const V& v) const {
    return v * scale;
  }
  template <class V>
  V tiny(const V& v) const {
    return v * V(1e-30f);  // to float's subnormals (bfloat16) and past half's
  }
  template <class V>
  V gradient(const V& g, const V& v) const {
    return g * (V(s) * (v - (V(a) + v * m)));
  }
};

template <class T>
[[gnu::noinline]] std::uint16_t scalarMapped(int which, const FusedRowOps& o, T a, T b) {
  const float x = a, y = b;
  switch (which) {
    case 0:
      return T(o.leaky(x)).bits;
    case 1:
      return T(o.normalize(x)).bits;
    case 2:
      return T(o.scaled(x)).bits;
    case 3:
      return T(o.tiny(x)).bits;
    default:
      return T(o.gradient(x, y)).bits;
  }
}

template <class T>
void mapFused(int which, const FusedRowOps& o, hybrid3d::Index n, const T* a, const T* b, T* out,
              const std::int16_t* keep) {
  using hybrid3d::Impl::HostIsa;
  namespace I = hybrid3d::Impl;
  const HostIsa isa = HostIsa::Avx2;
  const auto leaky = [o](const auto& v) HYBRID3D_HOST_INLINE_LAMBDA { return o.leaky(v); };
  switch (which) {
    case 0:
      return keep ? I::mapRowKept(isa, n, a, out, keep, leaky) : I::mapRow(isa, n, a, out, leaky);
    case 1:
      return I::mapRow(isa, n, a, out,
                       [o](const auto& v) HYBRID3D_HOST_INLINE_LAMBDA { return o.normalize(v); });
    case 2:
      return I::mapRow(isa, n, a, out,
                       [o](const auto& v) HYBRID3D_HOST_INLINE_LAMBDA { return o.scaled(v); });
    case 3:
      return I::mapRow(isa, n, a, out,
                       [o](const auto& v) HYBRID3D_HOST_INLINE_LAMBDA { return o.tiny(v); });
    default:
      return I::mapRows(isa, n, a, b, out,
                        [o](const auto& g, const auto& v)
                            HYBRID3D_HOST_INLINE_LAMBDA { return o.gradient(g, v); });
  }
}

template <class T>
void expectFusedRowsLikeScalars() {
  using hybrid3d::Index;
  const FusedRowOps o;
  std::vector<T> a(65536), b(65536);
  std::vector<std::int16_t> keep(65536);
  std::mt19937 rng(11);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i].bits = std::uint16_t(i * 40503u);  // every pattern once, scattered
    b[i].bits = std::uint16_t(rng());
    keep[i] = std::int16_t(rng() % 3 ? -1 : 0);
  }
  const auto check = [&](int which, bool kept, bool inPlace, Index offset, Index n) {
    std::vector<T> out(std::size_t(offset + n + 1));
    for (T& t : out) t.bits = 0x1234;
    if (inPlace) std::copy(a.begin() + offset, a.begin() + offset + n, out.begin() + offset);
    mapFused(which, o, n, inPlace ? out.data() + offset : a.data() + offset, b.data() + offset,
             out.data() + offset, kept ? keep.data() + offset : nullptr);
    for (Index i = offset; i < offset + n; ++i) {
      std::uint16_t want = scalarMapped(which, o, a[i], b[i]);
      if (kept && !keep[i]) want = 0;
      ASSERT_EQ(out[i].bits, want)
          << "op " << which << (kept ? " kept" : "") << (inPlace ? " in place" : "") << ", input "
          << a[i].bits << ", " << b[i].bits << ", offset " << offset << ", length " << n;
    }
    ASSERT_EQ(out[offset + n].bits, 0x1234) << "wrote past " << n;
  };
  for (int which = 0; which < 5; ++which)
    for (const bool kept : {false, true}) {
      if (kept && which != 0) continue;
      for (const bool inPlace : {false, true}) {
        if (inPlace && which == 4) continue;
        for (Index n = 0; n <= 40; ++n)
          for (Index offset = 0; offset < 16; ++offset) check(which, kept, inPlace, offset, n);
        check(which, kept, inPlace, 0, Index(a.size()));
        check(which, kept, inPlace, 3, Index(a.size()) - 3);
      }
    }
}

TEST(Scalar16, FusedRowsHaveTheScalarConversionsBits) {
  if (!hybrid3d::Impl::fusedRows<bfloat16>(hybrid3d::Impl::bestHostIsa()))
    GTEST_SKIP() << "this CPU (or build) has no AVX2 with F16C: no fused rows";
  {
    SCOPED_TRACE("bfloat16");
    expectFusedRowsLikeScalars<bfloat16>();
  }
  SCOPED_TRACE("half");
  expectFusedRowsLikeScalars<float16>();
}

#if HYBRID3D_ENABLE_ONEDNN
// oneDNN's reorder of `values` (f32) into data type `to`, as 16-bit patterns.
std::vector<std::uint16_t> oneDnnConvert(const std::vector<float>& values,
                                         dnnl::memory::data_type to) {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const dnnl::memory::dims dims{dnnl::memory::dim(values.size())};
  dnnl::memory src({dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a}, engine,
                   const_cast<float*>(values.data()));
  std::vector<std::uint16_t> out(values.size());
  dnnl::memory dst({dims, to, dnnl::memory::format_tag::a}, engine, out.data());
  dnnl::reorder(src, dst).execute(stream, src, dst);
  stream.wait();
  return out;
}

TEST(Scalar16, BFloat16MatchesOneDnn) {
  std::vector<float> v;
  for (float f : probeFloats())
    if (std::isfinite(f)) v.push_back(f);  // oneDNN's NaN payloads are its own
  const std::vector<std::uint16_t> ref = oneDnnConvert(v, dnnl::memory::data_type::bf16);
  // Every normal float bit for bit. oneDNN flushes float's subnormals (and -0) to +-0, as
  // AVX512-BF16's vcvtneps2bf16 does; ours keeps them, as the F16C instruction does for half.
  for (std::size_t i = 0; i < v.size(); ++i)
    if (std::abs(v[i]) >= std::numeric_limits<float>::min())
      ASSERT_EQ(bfloat16(v[i]).bits, ref[i]) << v[i];
}
#endif

}  // namespace
