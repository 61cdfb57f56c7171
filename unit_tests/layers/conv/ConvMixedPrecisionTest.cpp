// Mixed precision: Conv3d and ConvTranspose3d with bfloat16 and float16 activations (float
// master weights, float accumulation) against the float layer on the same inputs and weights
// (drawn, then rounded through the 16-bit type, so both runs see identical values), forward,
// backward-data and backward-weights, on every engine that runs 16-bit here; and the 16-bit
// layer's decomposition invariance against its own 1-rank run.
//
// Tolerances, elementwise (u: the 16-bit type's unit roundoff, 2^-8 bfloat16, 2^-11 float16;
// f = 2^-24, float's; K: the length of the sums behind a value; M: the same value computed from
// |x|, |dy|, |W|, |b|, by the float layer on the absolute values, which bounds every partial
// sum; eta = 2^-25 for float16, the absolute error of rounding into its subnormal range, 0 for
// bfloat16):
//   output y16 = round(y32~), y32~ float's dot product in the 16-bit run's order:
//     |y16 - y32| <= u |y32| + eta + 2 gamma_K M     (gamma_K = K f / (1 - K f))
//   (the second term covers an engine whose float sums run in another order than the float
//   layer's, e.g. a native bf16 primitive; the kokkos engine and oneDNN's f32 primitive on
//   converted operands compute y32~ = y32 bit for bit, so only the rounding remains);
//   input gradient: rounded once before the halo's scatterAdd, which sums a ghost contribution g
//   (itself rounded) into its owner's value in float and rounds again:
//     |dx16 - dx32| <= u |dx32| + u M + 2 eta + 2 gamma_K M
//   (u M bounds the roundings of the partial sums: sum_j u |g_j| <= u M; on 1 rank there are no
//   ghost contributions and the term is slack);
//   weight and bias gradients accumulate in float on float-converted operands:
//     |dW16 - dW32| <= 2 gamma_K M.
// Invariance (the 16-bit run on a grid against its own 1-rank run): both sides carry the
// roundings above, so the bound is the sum of the two sides' bounds around the float value:
//     y: 2u |y1| + 2 eta + 4 gamma_K M,  dx: 2u |dx1| + u M + 3 eta + 4 gamma_K M,
//     dW: 4 gamma_K M  (u |y1| stands for u |y32|, which it bounds to first order).
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/core/Precision.hpp>
#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/layers/Conv3d.hpp>
#include <hybrid3d/layers/ConvTranspose3d.hpp>

#include "ConvHarness.hpp"
#include "GridCases.hpp"
#include "LayerTensors.hpp"
#include "TestDevice.hpp"
#include "WorldRank.hpp"

namespace hybrid3d::test {
namespace {

template <class T>
constexpr double unitRoundoff() {
  return std::is_same_v<T, bfloat16> ? 0x1p-8 : 0x1p-11;
}
template <class T>
constexpr double subnormalError() {
  return std::is_same_v<T, float16> ? 0x1p-25 : 0.0;
}
double gammaFloat(double k) {
  const double f = 0x1p-24;
  return k * f / (1 - k * f);
}

// One configuration of either layer.
struct Case {
  int cin, cout, k, s, p;
  bool bias;
  Index3 extents;
  std::string name() const {
    return "cin " + std::to_string(cin) + " cout " + std::to_string(cout) + " k" +
           std::to_string(k) + " s" + std::to_string(s) + " p" + std::to_string(p) +
           (bias ? " bias " : " ") + toString(extents);
  }
};

template <template <class, class> class L, class T>
typename L<T, TestDevice>::Options optionsFor(const Case& c, ConvEngine engine) {
  typename L<T, TestDevice>::Options o;
  o.outChannels = c.cout;
  o.kernel = c.k;
  o.stride = c.s;
  o.padding = c.p;
  o.bias = c.bias;
  if constexpr (std::is_same_v<L<T, TestDevice>, Conv3d<T, TestDevice>>) o.engine = engine;
  (void)engine;
  return o;
}

// The lengths of the sums behind an output value, an input-gradient value and a weight-gradient
// value of a case (upper bounds; the float accumulation term uses them).
template <template <class, class> class L>
struct SumLengths {
  double y, dx, dw;
};
template <template <class, class> class L>
SumLengths<L> sumLengths(const Case& c, const TensorShape& out) {
  const double voxels = double(out.batch) * out.extents[0] * out.extents[1] * out.extents[2];
  if constexpr (std::is_same_v<L<float, TestDevice>, Conv3d<float, TestDevice>>) {
    const double taps = double(c.k) * c.k * c.k;
    return {c.cin * taps + 1, c.cout * taps + 8, voxels};
  } else {
    return {c.cin + 1.0, double(c.cout) * c.k * c.k * c.k + 8, voxels};
  }
}

struct Results {
  GlobalArray<double> y, dx;
  std::vector<double> dw, db;  // world sums
};

// Draws `n` values in [-1, 1], rounded through T (the float run sees the same values).
template <class T>
std::vector<double> representable(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (auto& e : v) e = double(float(T(float(u(rng)))));
  return v;
}
template <class T>
GlobalArray<double> representable(const GlobalArray<double>& a) {
  GlobalArray<double> b(a.label(), a.extent(0), a.extent(1), a.extent(2), a.extent(3), a.extent(4));
  for (std::size_t i = 0; i < a.size(); ++i) b.data()[i] = double(float(T(float(a.data()[i]))));
  return b;
}
GlobalArray<double> absolute(const GlobalArray<double>& a) {
  GlobalArray<double> b(a.label(), a.extent(0), a.extent(1), a.extent(2), a.extent(3), a.extent(4));
  for (std::size_t i = 0; i < a.size(); ++i) b.data()[i] = std::abs(a.data()[i]);
  return b;
}
std::vector<double> absolute(std::vector<double> v) {
  for (auto& e : v) e = std::abs(e);
  return v;
}

// The layer of activation type T on `grid`, parameters set to w and b, forward on x and
// backward with dy; results in double, parameter gradients summed over the world.
template <template <class, class> class L, class T>
Results run(const ProcessGrid& grid, const TensorShape& in, const Case& c, ConvEngine engine,
            const GlobalArray<double>& x, const GlobalArray<double>& dy,
            const std::vector<double>& w, const std::vector<double>& b,
            std::string* description = nullptr) {
  L<T, TestDevice> layer(grid, "conv", in, optionsFor<L, T>(c, engine));
  if (description) *description = layer.engineDescription();
  const auto params = layer.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::vector<double>& values = i == 0 ? w : b;
    auto h = Kokkos::create_mirror_view(params[i].value);
    EXPECT_EQ(h.size(), values.size());
    for (std::size_t j = 0; j < h.size() && j < values.size(); ++j) h(j) = float(values[j]);
    Kokkos::deep_copy(params[i].value, h);
  }
  const ForwardBackward fb = forwardBackward(layer, grid, x, dy);
  Results r{fb.y, fb.dx, {}, {}};
  for (std::size_t i = 0; i < params.size(); ++i) {
    allreduceSum(params[i].grad, grid.worldComm());
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), params[i].grad);
    (i == 0 ? r.dw : r.db).assign(h.data(), h.data() + h.size());
  }
  return r;
}

// |got - want| <= relative |want| + absolute + magnitude * mag, elementwise; reports the worst
// ratio of error to bound.
template <class A, class B, class C>
void expectWithin(const A& got, const B& want, const C& mag, double relative, double absolute,
                  double magnitude, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_EQ(mag.size(), want.size()) << what;
  double worst = 0;
  std::size_t at = 0;
  int failures = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = got.data()[i], v = want.data()[i], m = mag.data()[i];
    const double bound = relative * std::abs(v) + absolute + magnitude * m;
    const double err = std::abs(g - v);
    if (!(err <= bound)) ++failures;
    const double ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0);
    if (!(ratio <= worst)) {
      worst = ratio;
      at = i;
    }
  }
  EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << want.size()
                         << " values out of bound; worst at " << at << ": got " << got.data()[at]
                         << ", want " << want.data()[at] << ", |.|-magnitude " << mag.data()[at]
                         << ", error/bound " << worst;
}

// The test of one case on `grid`: the 16-bit layer against the float one on the same grid, and
// against its own 1-rank run.
template <template <class, class> class L, class T>
void checkCase(const ProcessGrid& grid, const Case& c, ConvEngine engine,
               std::string* description) {
  const TensorShape in{2, c.cin, c.extents};
  const TensorShape out =
      L<float, TestDevice>(selfGrid(), "shape", in, optionsFor<L, float>(c, ConvEngine::Kokkos))
          .outputShape();
  const unsigned seed = 500u + 13u * unsigned(grid.group());
  const auto x =
      representable<T>(randomGlobal<double>("x", in.batch, in.channels, in.extents, seed));
  const auto dy =
      representable<T>(randomGlobal<double>("dy", out.batch, out.channels, out.extents, seed + 1));
  const std::size_t wSize = std::size_t(c.cin) * c.cout * c.k * c.k * c.k;
  const auto w = representable<T>(wSize, 77);
  const auto b = c.bias ? representable<T>(std::size_t(c.cout), 78) : std::vector<double>();

  const Results r16 = run<L, T>(grid, in, c, engine, x, dy, w, b, description);
  const Results r32 = run<L, float>(grid, in, c, engine, x, dy, w, b);
  const Results mag = run<L, float>(grid, in, c, ConvEngine::Kokkos, absolute(x), absolute(dy),
                                    absolute(w), absolute(b));
  const Results one = run<L, T>(selfGrid(), in, c, engine, x, dy, w, b);

  const double u = unitRoundoff<T>(), eta = subnormalError<T>();
  // The world sums of the parameter gradients add each group's: lengths over all samples.
  const SumLengths<L> n = sumLengths<L>(c, out);
  const double groups = grid.numGroups();
  const double gy = gammaFloat(n.y), gdx = gammaFloat(n.dx), gdw = gammaFloat(n.dw * groups + 8);
  const std::string what = c.name() + " " + toString(precisionOf<T>()) + " " + toString(engine) +
                           " on " + toString(grid.dims());
  expectWithin(r16.y, r32.y, mag.y, u, eta, 2 * gy, what + ": output vs float");
  expectWithin(r16.dx, r32.dx, mag.dx, u, 2 * eta, u + 2 * gdx, what + ": grad_input vs float");
  expectWithin(r16.dw, r32.dw, mag.dw, 0, 0, 2 * gdw, what + ": grad_weight vs float");
  expectWithin(r16.db, r32.db, mag.db, 0, 0, 2 * gdw, what + ": grad_bias vs float");

  // The 1-rank run's gradients are of this group's samples: sum them over the groups.
  std::vector<std::vector<double>> oneGrads{one.dw, one.db};
  sumOver(oneGrads, grid.dataComm());
  expectWithin(r16.y, one.y, mag.y, 2 * u, 2 * eta, 4 * gy, what + ": output vs 1 rank");
  expectWithin(r16.dx, one.dx, mag.dx, 2 * u, 3 * eta, u + 4 * gdx,
               what + ": grad_input vs 1 rank");
  expectWithin(r16.dw, oneGrads[0], mag.dw, 0, 0, 4 * gdw, what + ": grad_weight vs 1 rank");
  expectWithin(r16.db, oneGrads[1], mag.db, 0, 0, 4 * gdw, what + ": grad_bias vs 1 rank");
}

// 1 rank, and uneven and 1-voxel-thin boxes of the invariance test's grids (one group, and
// two on 2x1x1): few grids, small boxes, to keep the suite's time.
std::vector<GridCase> mixedGrids() {
  return {{{1, 1, 1}, 1}, {{2, 1, 1}, 2}, {{1, 2, 2}, 1}, {{3, 1, 1}, 1}};
}

std::vector<ConvEngine> enginesFor16() {
  std::vector<ConvEngine> e{ConvEngine::Kokkos};
  if (oneDnnCanRun<bfloat16, TestDevice>()) e.push_back(ConvEngine::OneDnn);
  return e;
}

template <class T>
void conv3dCases(const ProcessGrid& grid, bool report) {
  const std::vector<Case> cases{
      {3, 4, 3, 1, 1, true, {7, 6, 5}},   // uneven on 2x1x1 and 3x1x1
      {3, 4, 3, 2, 1, false, {7, 6, 5}},  // strided
      {2, 3, 3, 1, 1, true, {3, 2, 2}},   // 1-voxel-thin boxes on 3x1x1 and 1x2x2
      {3, 2, 1, 1, 0, true, {5, 4, 3}},   // 1^3: the im2col route for 16-bit
  };
  for (ConvEngine engine : enginesFor16())
    for (const Case& c : cases) {
      std::string description;
      checkCase<Conv3d, T>(grid, c, engine, &description);
      if (engine == ConvEngine::OneDnn) {
        EXPECT_NE(description.find(std::string("on ") + toString(precisionOf<T>()) + " storage"),
                  std::string::npos)
            << description;
      }
      if (report && worldRank() == 0 && &c == &cases.front())
        std::printf("[ info ] Conv3d %s %s: %s\n", toString(precisionOf<T>()), toString(engine),
                    description.c_str());
    }
}

TEST(Conv3d, BFloat16AndHalfAgreeWithFloatAndOneRank) {
  const int ran = forEachGrid(mixedGrids(), [](const ProcessGrid& grid, const GridCase& g) {
    const bool first = g.spatial == Int3{1, 1, 1};
    conv3dCases<bfloat16>(grid, first);
    conv3dCases<float16>(grid, first);
  });
  EXPECT_GE(ran, 1);
}

// oneDNN's backward-data runs as a forward convolution on boxes of 32^3 output voxels and more
// with few input channels (src/engines/OneDnnConvolution.cpp): its staged operands too.
TEST(Conv3d, OneDnn16BitBackwardDataAsForwardAgreesWithFloat) {
  if (!oneDnnCanRun<bfloat16, TestDevice>()) GTEST_SKIP() << "the onednn engine is not built in";
  const std::vector<GridCase> one{{{1, 1, 1}, 1}};
  const int ran = forEachGrid(one, [](const ProcessGrid& grid, const GridCase&) {
    const Case c{2, 3, 3, 1, 1, true, {32, 32, 32}};
    std::string description;
    checkCase<Conv3d, bfloat16>(grid, c, ConvEngine::OneDnn, &description);
    EXPECT_NE(description.find("as a forward convolution"), std::string::npos) << description;
    checkCase<Conv3d, float16>(grid, c, ConvEngine::OneDnn, &description);
  });
  EXPECT_GE(ran, 1);
}

template <class T>
void convTransposeCases(const ProcessGrid& grid) {
  for (const Case& c : std::vector<Case>{{3, 4, 2, 2, 0, true, {5, 3, 4}},
                                         {2, 3, 2, 2, 0, false, {3, 2, 2}}})  // thin
    checkCase<ConvTranspose3d, T>(grid, c, ConvEngine::Kokkos, nullptr);
}

TEST(ConvTranspose3d, BFloat16AndHalfAgreeWithFloatAndOneRank) {
  const int ran = forEachGrid(mixedGrids(), [](const ProcessGrid& grid, const GridCase&) {
    convTransposeCases<bfloat16>(grid);
    convTransposeCases<float16>(grid);
  });
  EXPECT_GE(ran, 1);
}

// The kokkos engine's 16-bit passes compute exactly the float layer's values and round them
// once: on 1 rank the output and the input gradient are the rounding of float's, the weight
// gradient is float's bit for bit. (A layer that summed in 16 bits, or rounded twice, fails.)
TEST(Conv3d, BFloat16KokkosRoundsFloatsResultOnce) {
  const std::vector<GridCase> one{{{1, 1, 1}, 1}};
  const int ran = forEachGrid(one, [](const ProcessGrid& grid, const GridCase&) {
    const Case c{3, 4, 3, 1, 1, false, {5, 4, 3}};
    const TensorShape in{2, c.cin, c.extents};
    const auto x = representable<bfloat16>(randomGlobal<double>("x", 2, c.cin, c.extents, 3));
    const TensorShape out =
        Conv3d<float, TestDevice>(grid, "s", in, optionsFor<Conv3d, float>(c, ConvEngine::Kokkos))
            .outputShape();
    const auto dy = representable<bfloat16>(
        randomGlobal<double>("dy", out.batch, out.channels, out.extents, 4));
    const auto w = representable<bfloat16>(std::size_t(c.cin) * c.cout * 27, 5);
    const Results r16 = run<Conv3d, bfloat16>(grid, in, c, ConvEngine::Kokkos, x, dy, w, {});
    const Results r32 = run<Conv3d, float>(grid, in, c, ConvEngine::Kokkos, x, dy, w, {});
    for (std::size_t i = 0; i < r32.y.size(); ++i)
      ASSERT_EQ(r16.y.data()[i], double(float(bfloat16(float(r32.y.data()[i]))))) << i;
    for (std::size_t i = 0; i < r32.dx.size(); ++i)
      ASSERT_EQ(r16.dx.data()[i], double(float(bfloat16(float(r32.dx.data()[i]))))) << i;
    for (std::size_t i = 0; i < r32.dw.size(); ++i) ASSERT_EQ(r16.dw[i], r32.dw[i]) << i;
  });
  EXPECT_GE(ran, 1);
}

// The plan's guess for auto without timings (StepCost) hands 16-bit layers on host memory to
// oneDNN where it is built (as float ones), from the same box size; the kokkos engine otherwise.
// (Conv3d itself times them: ConvAutoTimingTest.cpp.)
TEST(Conv3dEngine, AutoTakesOneDnnFor16BitOnHostMemory) {
  const ConvEngine big = HYBRID3D_ENABLE_ONEDNN ? ConvEngine::OneDnn : ConvEngine::Kokkos;
  EXPECT_EQ((resolveConvEngine<bfloat16, Kokkos::HostSpace>(ConvEngine::Auto, "c", 64, 64)), big);
  EXPECT_EQ((resolveConvEngine<float16, Kokkos::HostSpace>(ConvEngine::Auto, "c", 64, 64)), big);
  EXPECT_EQ((resolveConvEngine<bfloat16, Kokkos::HostSpace>(ConvEngine::Auto, "c", 8, 8)),
            ConvEngine::Kokkos);
  if (!HYBRID3D_ENABLE_ONEDNN) {
    EXPECT_THROW((resolveConvEngine<float16, Kokkos::HostSpace>(ConvEngine::OneDnn, "c", 64, 64)),
                 Error);
  }
}

}  // namespace
}  // namespace hybrid3d::test
