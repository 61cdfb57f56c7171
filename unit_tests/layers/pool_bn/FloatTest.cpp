// The float instantiations (the training scalar) agree with double to float's resolution on
// every grid: the same kernels, so this checks that the float paths (float views with double
// batch-norm accumulators, float halos) run and reduce correctly.

#include <gtest/gtest.h>

#include <hybrid3d/layers/AvgPool3d.hpp>
#include <hybrid3d/layers/BatchNorm3d.hpp>
#include <hybrid3d/layers/MaxPool3d.hpp>

#include "GridCases.hpp"
#include "LayerTensors.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

void expectClose(const ForwardBackward& f, const ForwardBackward& d, double tol, const char* what) {
  SCOPED_TRACE(what);
  expectSameOutputAndGradient(f, d, tol);
}

TEST(PoolAndBatchNorm, FloatAgreesWithDoubleOnEveryGrid) {
  forEachGrid(standardGridCases(), [](const ProcessGrid& grid, const GridCase&) {
    const TensorShape s{2, 3, {7, 6, 9}};
    const auto x = randomGlobal<double>("x", 2, 3, s.extents, 81 + grid.group(), 1, 3);
    const auto dyFull = randomGlobal<double>("dy", 2, 3, s.extents, 91 + grid.group());
    const Index3 pooled = windowOutputExtents(s.extents, Window::cubic(3, 2, 1));
    const auto dyPool = randomGlobal<double>("dy", 2, 3, pooled, 92 + grid.group());
    expectClose(
        forwardBackward(MaxPool3d<float, TestDevice>(grid, "max", s, {3, 2, 1}), grid, x, dyPool),
        forwardBackward(MaxPool3d<double, TestDevice>(grid, "max", s, {3, 2, 1}), grid, x, dyPool),
        1e-6, "MaxPool3d");
    expectClose(forwardBackward(AvgPool3d<float, TestDevice>(grid, "avg", s, {3, 2, 1, false}),
                                grid, x, dyPool),
                forwardBackward(AvgPool3d<double, TestDevice>(grid, "avg", s, {3, 2, 1, false}),
                                grid, x, dyPool),
                1e-6, "AvgPool3d");
    expectClose(
        forwardBackward(BatchNorm3d<float, TestDevice>(grid, "bn", s, {}), grid, x, dyFull),
        forwardBackward(BatchNorm3d<double, TestDevice>(grid, "bn", s, {}), grid, x, dyFull), 1e-5,
        "BatchNorm3d");
  });
}

// Inputs of mean 1e3 and spread 1 (uniform in (999, 1001)): the case the shifted double sums
// exist for (BatchNorm3d_impl.hpp). Plain one-pass float sums lose the variance there
// (E[x^2] ~ 1e6 at float's relative 6e-8 is +-0.06 against a variance of 0.33). x is rounded
// to float for both layers, so only their arithmetic differs; two steps: the first with the
// running mean as shift K = 0, the second with K = 100.
TEST(PoolAndBatchNorm, FloatBatchNormKeepsItsDigitsAtALargeMean) {
  forEachGrid(standardGridCases(), [](const ProcessGrid& grid, const GridCase&) {
    const TensorShape s{2, 3, {7, 6, 9}};
    const auto x = convertGlobal<double>(convertGlobal<float>(
        randomGlobal<double>("x", 2, 3, s.extents, 83 + grid.group(), 999, 1001)));
    const auto dy = randomGlobal<double>("dy", 2, 3, s.extents, 93 + grid.group());
    BatchNorm3d<float, TestDevice> f(grid, "bn", s, {});
    BatchNorm3d<double, TestDevice> d(grid, "bn", s, {});
    for (const char* step : {"step 1 (shift 0)", "step 2 (shift 100)"})
      expectClose(forwardBackward(f, grid, x, dy), forwardBackward(d, grid, x, dy), 2e-4, step);
  });
}

}  // namespace
}  // namespace hybrid3d::test
