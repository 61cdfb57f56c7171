// Dense layers: FlattenDense and Dense give the 1-rank output, input gradient and (reduced as
// the trainer does, gathered into global tensors) parameter gradients on every grid, G = 2
// included; gradients match finite differences; a flattened size other than the declared one is
// refused.
#include <cmath>

#include <gtest/gtest.h>

#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/layers/Dense.hpp>
#include <hybrid3d/layers/DistributedParameter.hpp>
#include <hybrid3d/layers/FlattenDense.hpp>

#include "GridCases.hpp"
#include "Invariance.hpp"
#include "TestDevice.hpp"
#include "TestHelpers.hpp"

namespace hybrid3d::test {
namespace {

using Exec = TestExecSpace;
using Host = Kokkos::View<double*, Kokkos::HostSpace>;
const Index3 kExtents{5, 3, 4};
const int kChannels = 3, kOut = 4;

struct DenseResult {
  Host y, dx, dw, db;
};

// The same global values on every grid; each rank keeps its part (FlattenDense's weight holds
// only its own columns).
template <class P>
void setRandom(const P& p, unsigned seed) {
  const Host h = hostCopy(randomFeatures("p", 1, globalSize(p.shape), seed));
  scatterGlobal(p, std::vector<double>(h.data(), h.data() + h.size()), p.value);
}

// The parameter's gradient of the global loss (reduced as the trainer does), as a global array.
template <class P>
Host globalGrad(const P& p, const ProcessGrid& grid) {
  const std::vector<double> g = globalGradient(p, grid);
  Host h("grad", g.size());
  std::copy(g.begin(), g.end(), h.data());
  return h;
}

// FlattenDense on `grid` for global input x (this group's samples) and upstream gradient dy.
DenseResult runFlatten(const ProcessGrid& grid, const GlobalArray<double>& x,
                       const FeatureView<double, TestDevice>& dy) {
  const int N = int(x.extent(0));
  FlattenDense<double, TestDevice> layer(grid, "fc1", {N, kChannels, kExtents}, {kOut, true});
  setRandom(layer.weight(), 1);
  setRandom(layer.bias(), 2);
  const BlockDecomposition& dec = layer.inputDecomposition();
  auto xt = createDistTensor<double, TestDevice>("x", N, kChannels, dec, grid.coords(),
                                                 GhostWidths::uniform(1));
  auto dxt = createDistTensor<double, TestDevice>("dx", N, kChannels, dec, grid.coords(),
                                                  {{0, 1, 0}, {1, 0, 0}});
  scatterFromGlobal(x, xt);
  const FeatureView<double, TestDevice> y("y", N, kOut);
  layer.forward(Exec(), xt, y);
  layer.backward(Exec(), xt, dy, dxt);
  const auto dx = gatherToGlobal(dxt, grid.spatialComm());
  Host dxh("dx", dx.size());
  std::copy(dx.data(), dx.data() + dx.size(), dxh.data());
  return {hostCopy(y), dxh, globalGrad(layer.weight(), grid), globalGrad(layer.bias(), grid)};
}

DenseResult runDense(const ProcessGrid& grid, const FeatureView<double, TestDevice>& x,
                     const FeatureView<double, TestDevice>& dy) {
  const int N = int(x.extent(0)), F = int(x.extent(1));
  Dense<double, TestDevice> layer(grid, "fc2", {N, F, {1, 1, 1}}, {kOut, true});
  setRandom(layer.weight(), 3);
  setRandom(layer.bias(), 4);
  const FeatureView<double, TestDevice> y("y", N, kOut), dx("dx", N, F);
  layer.forward(Exec(), x, y);
  layer.backward(Exec(), x, dy, dx);
  allreduceSum(layer.weight().grad, grid.worldComm());
  allreduceSum(layer.bias().grad, grid.worldComm());
  return {hostCopy(y), hostCopy(dx), hostCopy(layer.weight().grad), hostCopy(layer.bias().grad)};
}

// Rows [first, first + count) of a flat row-major host array with `width` columns.
Host rowsOf(const Host& a, Index width, Index first, Index count) {
  Host r("rows", width * count);
  std::copy(a.data() + first * width, a.data() + (first + count) * width, r.data());
  return r;
}

void expectSame(const DenseResult& got, const DenseResult& want, Index first, Index count,
                Index inWidth) {
  EXPECT_LE(maxRelativeError(got.y, rowsOf(want.y, kOut, first, count)), 1e-12) << "output";
  EXPECT_LE(maxRelativeError(got.dx, rowsOf(want.dx, inWidth, first, count)), 1e-12)
      << "grad_input";
  EXPECT_LE(maxRelativeError(got.dw, want.dw), 1e-12) << "grad_weight";
  EXPECT_LE(maxRelativeError(got.db, want.db), 1e-12) << "grad_bias";
}

TEST(FlattenDense, MatchesOneRankOnEveryGrid) {
  const int ran = forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase& c) {
    const int N = 2, total = N * c.groups;  // group g holds samples [g*N, (g+1)*N)
    const auto x = randomGlobal<double>("x", total, kChannels, kExtents, 7);
    const auto dy = randomFeatures("dy", total, kOut, 8);
    const Index first = grid.group() * N;
    const auto got = runFlatten(grid, samples(x, first, N), rows(dy, first, N));
    const auto want = runFlatten(selfGrid(), x, dy);
    expectSame(got, want, first, N, kChannels * kExtents[0] * kExtents[1] * kExtents[2]);
  });
  EXPECT_GE(ran, 1);
}

TEST(Dense, MatchesOneRankOnEveryGrid) {
  const int ran = forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase& c) {
    const int N = 3, F = 6, total = N * c.groups;
    const auto x = randomFeatures("x", total, F, 9);
    const auto dy = randomFeatures("dy", total, kOut, 10);
    const Index first = grid.group() * N;
    const auto got = runDense(grid, rows(x, first, N), rows(dy, first, N));
    const auto want = runDense(selfGrid(), x, dy);
    expectSame(got, want, first, N, F);
  });
  EXPECT_GE(ran, 1);
}

// Central differences of L = sum(r * y) with respect to a few entries of a host array that
// `evaluate` reads, against the analytic gradient `grad`.
template <class Eval>
void expectFiniteDifferences(double* entry, Index count, const Host& grad, Eval evaluate,
                             const char* what) {
  const double h = 1e-6;
  for (Index i = 0; i < count; i += std::max<Index>(1, count / 7)) {
    const double saved = entry[i];
    entry[i] = saved + h;
    const double lp = evaluate();
    entry[i] = saved - h;
    const double lm = evaluate();
    entry[i] = saved;
    const double fd = (lp - lm) / (2 * h);
    EXPECT_NEAR(grad(i), fd, 1e-7 * (1 + std::abs(fd))) << what << " entry " << i;
  }
}

TEST(FlattenDense, GradientsMatchFiniteDifferences) {
  const ProcessGrid& grid = selfGrid();
  const int N = 2;
  const Index3 e{2, 3, 2};
  const Index in = kChannels * e[0] * e[1] * e[2];
  FlattenDense<double, TestDevice> layer(grid, "fc1", {N, kChannels, e}, {kOut, true, in});
  auto x = randomGlobal<double>("x", N, kChannels, e, 1);
  Host w = hostCopy(randomFeatures("w", kOut, in, 2)),
       b = hostCopy(randomFeatures("b", 1, kOut, 3));
  const Host r = hostCopy(randomFeatures("r", N, kOut, 4));
  const BlockDecomposition& dec = layer.inputDecomposition();
  auto xt = createDistTensor<double, TestDevice>("x", N, kChannels, dec, grid.coords());
  auto dxt = createDistTensor<double, TestDevice>("dx", N, kChannels, dec, grid.coords());
  const FeatureView<double, TestDevice> y("y", N, kOut), dy("dy", N, kOut);
  fillFrom(dy, r);
  auto evaluate = [&] {
    fillFrom(layer.weight().value, w);
    fillFrom(layer.bias().value, b);
    scatterFromGlobal(x, xt);
    layer.forward(Exec(), xt, y);
    const Host yh = hostCopy(y);
    double s = 0;
    for (std::size_t i = 0; i < yh.size(); ++i) s += r(i) * yh(i);
    return s;
  };
  evaluate();
  layer.backward(Exec(), xt, dy, dxt);
  const auto dx = gatherToGlobal(dxt, grid.spatialComm());
  Host dxh("dx", dx.size());
  std::copy(dx.data(), dx.data() + dx.size(), dxh.data());
  expectFiniteDifferences(x.data(), Index(x.size()), dxh, evaluate, "input");
  expectFiniteDifferences(w.data(), Index(w.size()), hostCopy(layer.weight().grad), evaluate,
                          "weight");
  expectFiniteDifferences(b.data(), Index(b.size()), hostCopy(layer.bias().grad), evaluate, "bias");
}

TEST(Dense, GradientsMatchFiniteDifferences) {
  const ProcessGrid& grid = selfGrid();
  const int N = 3, F = 5;
  Dense<double, TestDevice> layer(grid, "fc2", {N, F, {1, 1, 1}}, {kOut, true});
  Host x = hostCopy(randomFeatures("x", N, F, 1));
  Host w = hostCopy(randomFeatures("w", kOut, F, 2)), b = hostCopy(randomFeatures("b", 1, kOut, 3));
  const Host r = hostCopy(randomFeatures("r", N, kOut, 4));
  const FeatureView<double, TestDevice> xd("x", N, F), y("y", N, kOut), dy("dy", N, kOut),
      dx("dx", N, F);
  fillFrom(dy, r);
  auto evaluate = [&] {
    fillFrom(layer.weight().value, w);
    fillFrom(layer.bias().value, b);
    fillFrom(xd, x);
    layer.forward(Exec(), xd, y);
    const Host yh = hostCopy(y);
    double s = 0;
    for (std::size_t i = 0; i < yh.size(); ++i) s += r(i) * yh(i);
    return s;
  };
  evaluate();
  layer.backward(Exec(), xd, dy, dx);
  expectFiniteDifferences(x.data(), Index(x.size()), hostCopy(dx), evaluate, "input");
  expectFiniteDifferences(w.data(), Index(w.size()), hostCopy(layer.weight().grad), evaluate,
                          "weight");
  expectFiniteDifferences(b.data(), Index(b.size()), hostCopy(layer.bias().grad), evaluate, "bias");
}

TEST(FlattenDense, RefusesInputOfAnotherFlattenedSize) {
  try {
    FlattenDense<double, TestDevice> layer(selfGrid(), "fc1", {2, 256, {2, 2, 2}},
                                           {2048, true, 4096});
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fc1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2048"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hybrid3d::test
