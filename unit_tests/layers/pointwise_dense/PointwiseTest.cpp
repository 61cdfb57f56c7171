// Point-wise activations: decomposition invariance with different ghost widths on x and y,
// in-place forward, finite-difference derivatives on DistTensors and on [N, F] views.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/layers/Activation.hpp>

#include "GridCases.hpp"
#include "Invariance.hpp"
#include "TestDevice.hpp"
#include "TestHelpers.hpp"

namespace hybrid3d::test {
namespace {

using Exec = TestExecSpace;
const Index3 kExtents{5, 4, 3};

// Output and input gradient on `grid` for the global input x and upstream gradient dy;
// x and y deliberately carry different ghosts.
template <class Op>
std::pair<GlobalArray<double>, GlobalArray<double>> runPointwise(const ProcessGrid& grid,
                                                                 const Op& op,
                                                                 const GlobalArray<double>& x,
                                                                 const GlobalArray<double>& dy) {
  const int N = int(x.extent(0)), C = int(x.extent(1));
  const Pointwise<Op, double, TestDevice> layer(grid, "act", {N, C, kExtents}, op);
  const BlockDecomposition& dec = layer.inputDecomposition();
  auto xt =
      createDistTensor<double, TestDevice>("x", N, C, dec, grid.coords(), GhostWidths::uniform(1));
  auto yt =
      createDistTensor<double, TestDevice>("y", N, C, dec, grid.coords(), {{0, 1, 0}, {2, 0, 1}});
  auto dyt =
      createDistTensor<double, TestDevice>("dy", N, C, dec, grid.coords(), {{1, 0, 0}, {0, 0, 0}});
  auto dxt = createDistTensor<double, TestDevice>("dx", N, C, dec, grid.coords());
  scatterFromGlobal(x, xt);
  scatterFromGlobal(dy, dyt);
  layer.forward(Exec(), xt, yt);
  layer.backward(Exec(), xt, dyt, dxt);
  return {gatherToGlobal(yt, grid.spatialComm()), gatherToGlobal(dxt, grid.spatialComm())};
}

template <class Op>
void checkInvariance(const Op& op, double lo) {
  const int ran = forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const auto x = randomGlobal<double>("x", 2, 3, kExtents, 11 + grid.group(), lo, 1.0);
    const auto dy = randomGlobal<double>("dy", 2, 3, kExtents, 21 + grid.group());
    const auto got = runPointwise(grid, op, x, dy);
    const auto want = runPointwise(selfGrid(), op, x, dy);
    expectSameArray(got.first, want.first, 1e-14, "output");
    expectSameArray(got.second, want.second, 1e-14, "grad_input");
  });
  EXPECT_GE(ran, 1);
}

TEST(Pointwise, LeakyReluMatchesOneRankWithAnyGhosts) { checkInvariance(LeakyReLUOp{0.3}, -1.0); }
TEST(Pointwise, ScaledTanhMatchesOneRankWithAnyGhosts) { checkInvariance(ScaledTanhOp{}, -1.0); }
TEST(Pointwise, Log1pMatchesOneRankWithAnyGhosts) { checkInvariance(Log1pOp{}, 0.0); }

// y = x (the same tensor) gives the out-of-place result.
TEST(Pointwise, InPlaceForwardEqualsOutOfPlace) {
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const auto x = randomGlobal<double>("x", 2, 3, kExtents, 5);
    const ScaledTanh<double, TestDevice> layer(grid, "tanh", {2, 3, kExtents});
    const BlockDecomposition& dec = layer.inputDecomposition();
    auto a = createDistTensor<double, TestDevice>("a", 2, 3, dec, grid.coords(),
                                                  GhostWidths::uniform(1));
    auto b = createDistTensor<double, TestDevice>("b", 2, 3, dec, grid.coords());
    scatterFromGlobal(x, a);
    layer.forward(Exec(), a, b);
    layer.forward(Exec(), a, a);
    expectSameArray(gatherToGlobal(a, grid.spatialComm()), gatherToGlobal(b, grid.spatialComm()),
                    0.0, "in place");
  });
}

// Central differences of L = sum(r * op(x)) against backward's dx, on one rank.
template <class Op>
void checkFiniteDifferences(const Op& op, double lo) {
  const ProcessGrid& grid = selfGrid();
  const Index3 e{3, 2, 2};
  const auto x = randomGlobal<double>("x", 2, 2, e, 3, lo, 1.0);
  const auto r = randomGlobal<double>("r", 2, 2, e, 4);
  const Pointwise<Op, double, TestDevice> layer(grid, "act", {2, 2, e}, op);
  const BlockDecomposition& dec = layer.inputDecomposition();
  auto xt = createDistTensor<double, TestDevice>("x", 2, 2, dec, grid.coords());
  auto yt = createDistTensor<double, TestDevice>("y", 2, 2, dec, grid.coords());
  auto rt = createDistTensor<double, TestDevice>("r", 2, 2, dec, grid.coords());
  auto dxt = createDistTensor<double, TestDevice>("dx", 2, 2, dec, grid.coords());
  scatterFromGlobal(x, xt);
  scatterFromGlobal(r, rt);
  layer.backwardData(Exec(), xt, rt, dxt);
  const auto dx = gatherToGlobal(dxt, grid.spatialComm());
  auto loss = [&](const GlobalArray<double>& xs) {
    scatterFromGlobal(xs, xt);
    layer.forward(Exec(), xt, yt);
    const auto y = gatherToGlobal(yt, grid.spatialComm());
    double s = 0;
    for (std::size_t i = 0; i < y.size(); ++i) s += r.data()[i] * y.data()[i];
    return s;
  };
  const double h = 1e-6;
  for (std::size_t i = 0; i < x.size(); i += 5) {
    GlobalArray<double> xp("xp", 2, 2, e[0], e[1], e[2]), xm("xm", 2, 2, e[0], e[1], e[2]);
    Kokkos::deep_copy(xp, x);
    Kokkos::deep_copy(xm, x);
    xp.data()[i] += h;
    xm.data()[i] -= h;
    const double fd = (loss(xp) - loss(xm)) / (2 * h);
    EXPECT_NEAR(dx.data()[i], fd, 1e-7 * (1 + std::abs(fd))) << Op::kind() << " element " << i;
  }

  // The same op on a [N, F] view.
  const FeatureView<double, TestDevice> xf = randomFeatures("xf", 3, 4, 9),
                                        rf = randomFeatures("rf", 3, 4, 8);
  if (lo >= 0) Kokkos::deep_copy(xf, 0.5);
  const FeatureView<double, TestDevice> yf("yf", 3, 4), dxf("dxf", 3, 4);
  layer.backward(Exec(), xf, rf, dxf);
  const auto dxh = hostCopy(dxf);
  auto lossF = [&](Index i, double delta) {
    auto xh = Kokkos::create_mirror(xf);  // a copy even where xf is host memory
    Kokkos::deep_copy(xh, xf);
    xh.data()[i] += delta;
    const FeatureView<double, TestDevice> xs("xs", 3, 4);
    Kokkos::deep_copy(xs, xh);
    layer.forward(Exec(), xs, yf);
    const auto y = hostCopy(yf), rh = hostCopy(rf);
    double s = 0;
    for (std::size_t k = 0; k < y.size(); ++k) s += rh(k) * y(k);
    return s;
  };
  for (Index i = 0; i < 12; i += 3) {
    const double fd = (lossF(i, h) - lossF(i, -h)) / (2 * h);
    EXPECT_NEAR(dxh(i), fd, 1e-7 * (1 + std::abs(fd))) << Op::kind() << " feature " << i;
  }
}

TEST(Pointwise, LeakyReluGradientMatchesFiniteDifferences) {
  checkFiniteDifferences(LeakyReLUOp{0.01}, -1.0);
}
TEST(Pointwise, ScaledTanhGradientMatchesFiniteDifferences) {
  checkFiniteDifferences(ScaledTanhOp{}, -1.0);
}
TEST(Pointwise, Log1pGradientMatchesFiniteDifferences) { checkFiniteDifferences(Log1pOp{}, 0.0); }

}  // namespace
}  // namespace hybrid3d::test
