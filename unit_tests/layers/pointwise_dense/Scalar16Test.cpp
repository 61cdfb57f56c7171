// The point-wise layers, dropout, concat, the dense layers and the losses in the 16-bit
// activation types (bfloat16, float16) against the float layers on the same inputs (rounded
// through the 16-bit type first, so both read identical values) and the same float weights:
// forward, input gradient and parameter gradients; FlattenDense (partial products summed over
// the spatial group) also on the standard grids against its own 1-rank run. Bounds per element,
// |got - want| <= rel |want| + abs, u the type's unit roundoff (pool_bn/Scalar16Check.hpp),
// derived where they are used.
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/layers/Activation.hpp>
#include <hybrid3d/layers/Concat.hpp>
#include <hybrid3d/layers/Dense.hpp>
#include <hybrid3d/layers/DistributedParameter.hpp>
#include <hybrid3d/layers/Dropout.hpp>
#include <hybrid3d/layers/FlattenDense.hpp>
#include <hybrid3d/layers/MseLoss.hpp>
#include <hybrid3d/layers/SoftmaxCrossEntropy.hpp>

#include "DifferingCells.hpp"
#include "GridCases.hpp"
#include "Invariance.hpp"
#include "LayerTensors.hpp"
#include "TestDevice.hpp"
#include "TestHelpers.hpp"
#include "layers/pool_bn/Scalar16Check.hpp"

namespace hybrid3d::test {
namespace {

using Exec = TestExecSpace;
using Host = Kokkos::View<double*, Kokkos::HostSpace>;

template <class T>
class Layers16 : public ::testing::Test {};
using Scalar16Types = ::testing::Types<bfloat16, float16>;
TYPED_TEST_SUITE(Layers16, Scalar16Types);

// The 1-rank cases run on world rank 0 alone (a 1x1x1 grid of one group).
const std::vector<GridCase> kOneRank{{{1, 1, 1}, 1}};

// One rounding of a float result to T, and 2^-20 for float operations (tanh, log1p, a
// contraction) that the other build may evaluate to another float ulp or two.
template <class T>
Bound oneRounding() {
  return {unitRoundoff<T>() + 0x1p-20, subnormalFloor<T>()};
}

// A float sum of K products a b, |a| <= A, |b| <= B, in another order than float's gemm (and
// one more float addition, the bias, on either side): the two differ by at most
// 2 (K + 1) 2^-24 * K A B (each within (K + 1) 2^-24 of the sum of |a b| <= K A B).
double dotBound(double K, double A, double B) { return 2 * (K + 1) * kFloatRoundoff * K * A * B; }

template <class T, class V>
FeatureView<T, TestDevice> featuresOf(const V& v) {
  const Host h = hostCopy(v);
  FeatureView<T, TestDevice> out(std::string(v.label()) + " 16", v.extent(0), v.extent(1));
  auto m = Kokkos::create_mirror_view(out);
  for (std::size_t i = 0; i < h.size(); ++i) m.data()[i] = T(float(h(i)));
  Kokkos::deep_copy(out, m);
  return out;
}

// Feature views of the same (T-representable) values in T and in float.
template <class T>
std::pair<FeatureView<T, TestDevice>, FeatureView<float, TestDevice>> features(Index n, Index f,
                                                                               unsigned seed) {
  const auto v = featuresOf<T>(randomFeatures("v", n, f, seed));
  return {v, featuresOf<float>(v)};
}

TYPED_TEST(Layers16, PointwiseDropoutAgreeWithFloat) {
  using T = TypeParam;
  forEachGrid(kOneRank, [&](const ProcessGrid& grid, const GridCase&) {
    const TensorShape s{2, 3, {5, 4, 6}};
    // log1p needs x > -1: inputs in (-0.5, 1.5).
    const auto x = roundedThrough<T>(randomGlobal<double>("x", 2, 3, s.extents, 5, -0.5, 1.5));
    const auto dy = roundedThrough<T>(randomGlobal<double>("dy", 2, 3, s.extents, 6));
    // Each output and input gradient: the float layer's arithmetic on the same values, rounded
    // once.
    auto check = [&](const ForwardBackward& got, const ForwardBackward& f, const char* what) {
      SCOPED_TRACE(what);
      expectWithin(got.y, f.y, oneRounding<T>(), "output");
      expectWithin(got.dx, f.dx, oneRounding<T>(), "input gradient");
    };
    check(forwardBackward(LeakyReLU<T, TestDevice>(grid, "a", s), grid, x, dy),
          forwardBackward(LeakyReLU<float, TestDevice>(grid, "a", s), grid, x, dy), "LeakyReLU");
    check(forwardBackward(ScaledTanh<T, TestDevice>(grid, "a", s), grid, x, dy),
          forwardBackward(ScaledTanh<float, TestDevice>(grid, "a", s), grid, x, dy), "ScaledTanh");
    check(forwardBackward(Log1p<T, TestDevice>(grid, "a", s), grid, x, dy),
          forwardBackward(Log1p<float, TestDevice>(grid, "a", s), grid, x, dy), "Log1p");
    Dropout<T, TestDevice> d16(grid, "drop", s, {0.6, 42});
    Dropout<float, TestDevice> d32(grid, "drop", s, {0.6, 42});
    d16.setStep(3, 0);
    d32.setStep(3, 0);
    const ForwardBackward got = forwardBackward(d16, grid, x, dy);
    check(got, forwardBackward(d32, grid, x, dy), "Dropout");
    // The mask is the float layer's (same key): a dropped element is 0 in both, checked above;
    // some are dropped and some kept.
    std::size_t zeros = 0;
    for (std::size_t i = 0; i < got.y.size(); ++i) zeros += got.y.data()[i] == 0.0;
    EXPECT_GT(zeros, 0u);
    EXPECT_LT(zeros, got.y.size());

    // The [N, F] forms of the dense part.
    const auto [fx, fx32] = features<T>(2, 7, 7);
    const auto [fdy, fdy32] = features<T>(2, 7, 8);
    const FeatureView<T, TestDevice> y("y", 2, 7), dx("dx", 2, 7);
    const FeatureView<float, TestDevice> y32("y", 2, 7), dx32("dx", 2, 7);
    const ScaledTanh<T, TestDevice> t16(grid, "t", {2, 7, {1, 1, 1}});
    const ScaledTanh<float, TestDevice> t32(grid, "t", {2, 7, {1, 1, 1}});
    t16.forward(Exec(), fx, y);
    t16.backward(Exec(), fx, fdy, dx);
    t32.forward(Exec(), fx32, y32);
    t32.backward(Exec(), fx32, fdy32, dx32);
    expectWithin(hostCopy(y), hostCopy(y32), oneRounding<T>(), "ScaledTanh [N, F] output");
    expectWithin(hostCopy(dx), hostCopy(dx32), oneRounding<T>(), "ScaledTanh [N, F] dx");
    Dropout<T, TestDevice> f16(grid, "drop", {2, 7, {1, 1, 1}}, {0.6, 42});
    Dropout<float, TestDevice> f32(grid, "drop", {2, 7, {1, 1, 1}}, {0.6, 42});
    f16.forward(Exec(), fx, y);
    f16.backward(Exec(), fx, fdy, dx);
    f32.forward(Exec(), fx32, y32);
    f32.backward(Exec(), fx32, fdy32, dx32);
    expectWithin(hostCopy(y), hostCopy(y32), oneRounding<T>(), "Dropout [N, F] output");
    expectWithin(hostCopy(dx), hostCopy(dx32), oneRounding<T>(), "Dropout [N, F] dx");
  });
}

// LeakyReLU and Dropout compare, multiply and select in float and round once: exactly the float
// layer's values rounded to T. Rows of 37 cells, so that the host rows' vector loops (AVX2 where
// the CPU has it, kernels/HostRows.hpp) run, not only their tails, and rows of more cells than
// one step of their float buffers (kFloatChunk; Dropout's columns go on across the steps).
TYPED_TEST(Layers16, LeakyReLUAndDropoutAreTheFloatLayersRoundedOnce) {
  using T = TypeParam;
  forEachGrid(kOneRank, [&](const ProcessGrid& grid, const GridCase&) {
    for (const TensorShape& s :
         {TensorShape{2, 3, {4, 3, 37}}, TensorShape{2, 3, {2, 2, Impl::kFloatChunk + 37}}}) {
      const auto x = roundedThrough<T>(randomGlobal<double>("x", 2, 3, s.extents, 15));
      const auto dy = roundedThrough<T>(randomGlobal<double>("dy", 2, 3, s.extents, 16));
      auto exact = [&](const ForwardBackward& got, const ForwardBackward& f, const char* what) {
        SCOPED_TRACE(what);
        expectWithin(got.y, roundedThrough<T>(f.y), Bound{}, "output");
        expectWithin(got.dx, roundedThrough<T>(f.dx), Bound{}, "input gradient");
      };
      exact(forwardBackward(LeakyReLU<T, TestDevice>(grid, "a", s), grid, x, dy),
            forwardBackward(LeakyReLU<float, TestDevice>(grid, "a", s), grid, x, dy), "LeakyReLU");
      Dropout<T, TestDevice> d16(grid, "drop", s, {0.8, 7});
      Dropout<float, TestDevice> d32(grid, "drop", s, {0.8, 7});
      d16.setStep(5, 0);
      d32.setStep(5, 0);
      exact(forwardBackward(d16, grid, x, dy), forwardBackward(d32, grid, x, dy), "Dropout");
    }
  });
}

// The dense part's dx = dy W on host memory (DenseKernels.hpp: blocks of columns summed side by
// side) gives the bits of the one-entry-per-work-item form: the same float sums in the same
// order. Columns of more than one block and a tail; signed zeros in dy.
template <class T>
void expectDenseBackwardDataBits() {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename TestDevice::memory_space>::accessible) {
    const Index N = Impl::kDenseHostSamples + 2, O = 37, I = 2 * Impl::kDenseHostColumns + 77;
    const auto dy = featuresOf<T>(randomFeatures("dy", N, O, 21));
    auto dyHost = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dy);
    for (Index o = 0; o < O; o += 5) dyHost(1, o) = T(o % 2 ? -0.0f : 0.0f);
    Kokkos::deep_copy(dy, dyHost);
    const auto w = featuresOf<float>(randomFeatures("w", O, I, 22));
    const FeatureView<T, TestDevice> byEntry("dx by entry", N, I), onHost("dx on host", N, I);
    Impl::mixedDenseBackwardDataByEntry("by entry", Exec(), dy, w, byEntry);
    Impl::mixedDenseBackwardDataOnHost("on host", Exec(), dy, w, onHost);
    Exec().fence();
    EXPECT_EQ(differingCells(onHost, byEntry), 0u);
  }
}

TYPED_TEST(Layers16, DenseBackwardDataOnHostHasTheByEntryBits) {
  expectDenseBackwardDataBits<TypeParam>();
}

// The dense part's dW += dy^T x on host memory (DenseKernels.hpp: blocks of rows and columns
// summed side by side, x widened once per block) gives the bits of the one-entry-per-work-item
// form: the same float sums in the same order, added to the same gradient. Rows and columns of
// more than one block and a tail; NaN, infinity and signed zeros in x (half's F16C path takes
// the portable conversion for a vector holding a NaN).
template <class T>
void expectDenseWeightGradientBits() {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename TestDevice::memory_space>::accessible) {
    const Index N = 3, O = 2 * Impl::kDenseHostRows + 3, I = Impl::kDenseHostColumns + 77;
    const auto dy = featuresOf<T>(randomFeatures("dy", N, O, 23));
    const auto x = featuresOf<T>(randomFeatures("x", N, I, 24));
    auto xHost = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
    xHost(1, 9) = T(std::numeric_limits<float>::quiet_NaN());
    xHost(2, 17) = T(std::numeric_limits<float>::infinity());
    xHost(0, 33) = T(-0.0f);
    Kokkos::deep_copy(x, xHost);
    const auto g0 = featuresOf<float>(randomFeatures("gw", O, I, 25));
    const FeatureView<float, TestDevice> byEntry("gw by entry", O, I), onHost("gw on host", O, I);
    Kokkos::deep_copy(byEntry, g0);
    Kokkos::deep_copy(onHost, g0);
    Impl::mixedDenseAddWeightGradientByEntry("by entry", Exec(), dy, x, byEntry);
    Impl::mixedDenseAddWeightGradientOnHost("on host", Exec(), dy, x, onHost);
    Exec().fence();
    EXPECT_EQ(differingCells(onHost, byEntry), 0u);
  }
}

TYPED_TEST(Layers16, DenseWeightGradientOnHostHasTheByEntryBits) {
  expectDenseWeightGradientBits<TypeParam>();
}

TYPED_TEST(Layers16, ConcatCopiesExactly) {
  using T = TypeParam;
  forEachGrid(kOneRank, [&](const ProcessGrid& grid, const GridCase&) {
    const Index3 e{3, 4, 5};
    const Concat<T, TestDevice> layer(grid, "cat", {2, 2, e}, {2, 3, e});
    const BlockDecomposition& dec = layer.inputDecomposition();
    auto tensor = [&](const char* label, int c) {
      return createDistTensor<T, TestDevice>(label, 2, c, dec, grid.coords(),
                                             GhostWidths::uniform(1));
    };
    auto a = tensor("a", 2), b = tensor("b", 3), y = tensor("y", 5), da = tensor("da", 2),
         db = tensor("db", 3);
    const auto ga = convertGlobal<T>(randomGlobal<double>("a", 2, 2, e, 1));
    const auto gb = convertGlobal<T>(randomGlobal<double>("b", 2, 3, e, 2));
    scatterFromGlobal(ga, a);
    scatterFromGlobal(gb, b);
    layer.forward(Exec(), a, b, y);
    layer.backward(Exec(), y, da, db);
    // A copy: every bit (compared as values: no NaN among them).
    expectWithin(convertGlobal<double>(gatherToGlobal(da, grid.spatialComm())),
                 convertGlobal<double>(ga), {0, 0}, "first input through y");
    expectWithin(convertGlobal<double>(gatherToGlobal(db, grid.spatialComm())),
                 convertGlobal<double>(gb), {0, 0}, "second input through y");
  });
}

// The same float weights on every layer (each rank keeps its part).
template <class P>
void setRandom(const P& p, unsigned seed) {
  const Host h = hostCopy(randomFeatures("p", 1, globalSize(p.shape), seed));
  std::vector<float> v(h.data(), h.data() + h.size());
  scatterGlobal(p, v, p.value);
}
template <class P>
Host globalGrad(const P& p, const ProcessGrid& grid) {
  const std::vector<float> g = globalGradient(p, grid);
  Host h("grad", g.size());
  std::copy(g.begin(), g.end(), h.data());
  return h;
}

struct DenseRun {
  Host y, dx, dw, db;
};

template <class T>
DenseRun runDense(const ProcessGrid& grid, const FeatureView<T, TestDevice>& x,
                  const FeatureView<T, TestDevice>& dy, int out) {
  const int N = int(x.extent(0)), F = int(x.extent(1));
  Dense<T, TestDevice> layer(grid, "fc", {N, F, {1, 1, 1}}, {out, true});
  static_assert(
      std::is_same_v<std::decay_t<decltype(layer.weight())>, Parameter<float, TestDevice>>,
      "float master weights");
  setRandom(layer.weight(), 3);
  setRandom(layer.bias(), 4);
  const FeatureView<T, TestDevice> y("y", N, out), dx("dx", N, F);
  layer.forward(Exec(), x, y);
  layer.backward(Exec(), x, dy, dx);
  return {hostCopy(y), hostCopy(dx), hostCopy(layer.weight().grad), hostCopy(layer.bias().grad)};
}

TYPED_TEST(Layers16, DenseAgreesWithFloat) {
  using T = TypeParam;
  const double u = unitRoundoff<T>();
  forEachGrid(kOneRank, [&](const ProcessGrid& grid, const GridCase&) {
    const int N = 3, F = 40, out = 5;
    const auto [x, x32] = features<T>(N, F, 9);
    const auto [dy, dy32] = features<T>(N, out, 10);
    const DenseRun got = runDense<T>(grid, x, dy, out), f = runDense<float>(grid, x32, dy32, out);
    // |x|, |dy|, |w| <= 1. y: F products plus the bias, rounded once; dx: `out` products, once;
    // the weight gradient N products and the bias gradient N terms, float (not rounded).
    expectWithin(got.y, f.y, {u, dotBound(F + 1, 1, 1) + subnormalFloor<T>()}, "output");
    expectWithin(got.dx, f.dx, {u, dotBound(out, 1, 1) + subnormalFloor<T>()}, "input gradient");
    expectWithin(got.dw, f.dw, {0, dotBound(N, 1, 1)}, "weight gradient");
    expectWithin(got.db, f.db, {0, dotBound(N, 1, 1)}, "bias gradient");
  });
}

const int kChannels = 2, kOut = 3;
const Index3 kExtents{3, 2, 5};  // uneven on the grids of 2 and 3 along D and W

template <class T>
DenseRun runFlatten(const ProcessGrid& grid, const GlobalArray<double>& x,
                    const FeatureView<double, TestDevice>& dyd) {
  const int N = int(x.extent(0));
  FlattenDense<T, TestDevice> layer(grid, "fc1", {N, kChannels, kExtents}, {kOut, true});
  setRandom(layer.weight(), 1);
  setRandom(layer.bias(), 2);
  const BlockDecomposition& dec = layer.inputDecomposition();
  auto xt = createDistTensor<T, TestDevice>("x", N, kChannels, dec, grid.coords(),
                                            GhostWidths::uniform(1));
  auto dxt = createDistTensor<T, TestDevice>("dx", N, kChannels, dec, grid.coords());
  scatterFromGlobal(convertGlobal<T>(x), xt);
  const auto dy = featuresOf<T>(dyd);
  const FeatureView<T, TestDevice> y("y", N, kOut);
  layer.forward(Exec(), xt, y);
  layer.backward(Exec(), xt, dy, dxt);
  const auto dx = convertGlobal<double>(gatherToGlobal(dxt, grid.spatialComm()));
  Host dxh("dx", dx.size());
  std::copy(dx.data(), dx.data() + dx.size(), dxh.data());
  return {hostCopy(y), dxh, globalGrad(layer.weight(), grid), globalGrad(layer.bias(), grid)};
}

Host rowsOf(const Host& a, Index width, Index first, Index count) {
  Host r("rows", width * count);
  std::copy(a.data() + first * width, a.data() + (first + count) * width, r.data());
  return r;
}

TYPED_TEST(Layers16, FlattenDenseAgreesWithFloatAndWithOneRank) {
  using T = TypeParam;
  const double u = unitRoundoff<T>();
  const Index in = kChannels * kExtents[0] * kExtents[1] * kExtents[2];
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase& c) {
    const int N = 2, total = N * c.groups;  // group g holds samples [g N, (g + 1) N)
    const auto x = roundedThrough<T>(randomGlobal<double>("x", total, kChannels, kExtents, 7));
    const auto dy = featuresOf<double>(featuresOf<T>(randomFeatures("dy", total, kOut, 8)));
    const Index first = grid.group() * N;
    const auto gx = samples(x, first, N);
    const auto gdy = rows(dy, first, N);
    const DenseRun got = runFlatten<T>(grid, gx, gdy), f = runFlatten<float>(grid, gx, gdy);
    const DenseRun one = runFlatten<T>(selfGrid(), x, dy);
    // y: `in` products summed in float over the ranks' parts and the spatial allreduce (at most
    // 8 more additions), plus the bias, rounded once. dx: kOut products, rounded once. Weight
    // gradient: `total` products over the data-parallel reduction; bias gradient `total` terms.
    const double yAbs = dotBound(in + 9, 1, 1), dxAbs = dotBound(kOut, 1, 1),
                 gAbs = dotBound(total + 1, 1, 1);
    expectWithin(got.y, f.y, {u, yAbs + subnormalFloor<T>()}, "output vs float");
    expectWithin(got.dx, f.dx, {u, dxAbs + subnormalFloor<T>()}, "dx vs float");
    expectWithin(got.dw, f.dw, {0, gAbs}, "weight gradient vs float");
    expectWithin(got.db, f.db, {0, gAbs}, "bias gradient vs float");
    // Against the 1-rank run: two float sums in different orders, each rounded once:
    // |r(a) - r(b)| <= |a - b| + u (|a| + |b|) <= 2u (1 + u) |r(b)| + (1 + u) |a - b|.
    const Bound twoRoundings{2 * u * (1 + u), (1 + u) * yAbs + subnormalFloor<T>()};
    expectWithin(got.y, rowsOf(one.y, kOut, first, N), twoRoundings, "output vs 1 rank");
    expectWithin(got.dx, rowsOf(one.dx, in, first, N),
                 {2 * u * (1 + u), (1 + u) * dxAbs + subnormalFloor<T>()}, "dx vs 1 rank");
    expectWithin(got.dw, one.dw, {0, gAbs}, "weight gradient vs 1 rank");
    expectWithin(got.db, one.db, {0, gAbs}, "bias gradient vs 1 rank");
  });
}

TYPED_TEST(Layers16, LossesAgreeWithFloat) {
  using T = TypeParam;
  forEachGrid(kOneRank, [&](const ProcessGrid& grid, const GridCase&) {
    // Mean squared error: the loss is summed in double from the same values (float's too): equal
    // to double's rounding; the gradient 2 (p - t) / n in float, rounded once.
    const int N = 3, F = 4;
    const auto [p, p32] = features<T>(N, F, 11);
    const auto [t, t32] = features<T>(N, F, 12);
    const MseLoss<T, TestDevice> mse(grid, "mse", N, F);
    const MseLoss<float, TestDevice> mse32(grid, "mse", N, F);
    const double loss = mse.forward(Exec(), p, t);
    static_assert(std::is_same_v<decltype(loss), const double>, "the loss in double");
    EXPECT_NEAR(loss, mse32.forward(Exec(), p32, t32), 1e-15 * loss) << "MSE loss";
    const FeatureView<T, TestDevice> g("g", N, F);
    const FeatureView<float, TestDevice> g32("g", N, F);
    mse.backward(Exec(), p, t, g);
    mse32.backward(Exec(), p32, t32, g32);
    expectWithin(hostCopy(g), hostCopy(g32), oneRounding<T>(), "MSE gradient");

    // Softmax cross-entropy: the softmax of each voxel in float from the same logits (equal to
    // float's but for a float ulp or two of exp and log: 2^-20 of the loss per voxel), the
    // gradient rounded once.
    const Index3 e{3, 2, 4};
    const int classes = 3;
    const SoftmaxCrossEntropy<T, TestDevice> ce(grid, "ce", {2, classes, e});
    const SoftmaxCrossEntropy<float, TestDevice> ce32(grid, "ce", {2, classes, e});
    const BlockDecomposition& dec = ce.inputDecomposition();
    const auto logits = roundedThrough<T>(randomGlobal<double>("x", 2, classes, e, 13, -4, 4));
    const auto u = randomGlobal<double>("u", 2, 1, e, 14, 0.0, double(classes));
    GlobalArray<int> labels("labels", 2, 1, e[0], e[1], e[2]);
    for (std::size_t i = 0; i < labels.size(); ++i) labels.data()[i] = int(u.data()[i]);
    auto x = createDistTensor<T, TestDevice>("x", 2, classes, dec, grid.coords());
    auto x32 = createDistTensor<float, TestDevice>("x", 2, classes, dec, grid.coords());
    auto dx = createDistTensor<T, TestDevice>("dx", 2, classes, dec, grid.coords());
    auto dx32 = createDistTensor<float, TestDevice>("dx", 2, classes, dec, grid.coords());
    auto l = createDistTensor<int, TestDevice>("l", 2, 1, dec, grid.coords());
    scatterFromGlobal(convertGlobal<T>(logits), x);
    scatterFromGlobal(convertGlobal<float>(logits), x32);
    scatterFromGlobal(labels, l);
    const double value = ce.forwardBackward(Exec(), x, l, dx);
    const double value32 = ce32.forwardBackward(Exec(), x32, l, dx32);
    EXPECT_NEAR(value, value32, 0x1p-20 * std::abs(value32)) << "cross-entropy loss";
    const auto d = convertGlobal<double>(gatherToGlobal(dx, grid.spatialComm()));
    const auto d32 = convertGlobal<double>(gatherToGlobal(dx32, grid.spatialComm()));
    expectWithin(d, d32, {unitRoundoff<T>() + 0x1p-20, 0x1p-20 * maxAbs(d32) + subnormalFloor<T>()},
                 "cross-entropy gradient");
  });
}

}  // namespace
}  // namespace hybrid3d::test
