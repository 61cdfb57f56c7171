// BatchNorm3d: global statistics equal the 1-rank run over the whole mini-batch (output, input
// gradient, parameter gradients, running statistics) on every grid; per-group statistics equal
// the 1-rank run over the group's samples; finite-difference gradients in training and
// inference mode; inference uses the running statistics; bad configurations.

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/layers/BatchNorm3d.hpp>

#include "GridCases.hpp"
#include "LayerRun.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

using BN = BatchNorm3d<double, TestDevice>;
using Vector = Kokkos::View<double*, Kokkos::HostSpace>;

// Per-channel state fed to the layer: parameters and the running statistics it starts from.
struct BnState {
  Vector gamma, beta, runningMean, runningVar;
};

BnState randomState(int channels, unsigned seed) {
  BnState s{Vector("gamma", channels), Vector("beta", channels), Vector("mean", channels),
            Vector("var", channels)};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  for (int c = 0; c < channels; ++c) {
    s.gamma(c) = u(rng);
    s.beta(c) = u(rng) - 1;
    s.runningMean(c) = 4 + u(rng);  // near the inputs' mean: exercises the shifted sums
    s.runningVar(c) = u(rng);
  }
  return s;
}

struct BnRun {
  GlobalArray<double> y, dx;       // this group's samples
  Vector dgamma, dbeta;            // summed over `gradComm`
  Vector runningMean, runningVar;  // after the step
};

// One forward and backward on `grid`; parameter gradients summed over `gradComm` (the world for
// the whole mini-batch, the spatial communicator for one group's share).
BnRun runBatchNorm(const ProcessGrid& grid, const BN::Options& options, bool training,
                   const BnState& state, const GlobalArray<double>& x,
                   const GlobalArray<double>& dy, MPI_Comm gradComm, bool split = false) {
  const TensorShape shape = shapeOf(x);
  BN bn(grid, "bn", shape, options);
  bn.setTraining(training);
  const auto params = bn.parameters();
  const auto buffers = bn.buffers();
  Kokkos::deep_copy(params[0].value, state.gamma);
  Kokkos::deep_copy(params[1].value, state.beta);
  Kokkos::deep_copy(buffers[0].value, state.runningMean);
  Kokkos::deep_copy(buffers[1].value, state.runningVar);
  // Tensors with ghosts (as neighbouring layers might give): the layer uses owned cells only.
  auto make = [&](const char* label, const GhostWidths& g) {
    return createDistTensor<double, TestDevice>(label, shape.batch, shape.channels,
                                                bn.inputDecomposition(), grid.coords(), g);
  };
  auto xt = make("x", GhostWidths::uniform(1));
  auto yt = make("y", {{0, 1, 0}, {1, 0, 2}});
  auto dyt = make("dy", {{1, 0, 0}, {0, 0, 1}});
  auto dxt = make("dx", {});
  scatterFromGlobal(x, xt);
  scatterFromGlobal(dy, dyt);
  TestExecSpace exec;
  bn.forward(exec, xt, yt);
  if (split) {  // the two halves, backwardData reading the x that forward kept
    bn.backwardWeights(exec, xt, dyt);
    bn.backwardData(exec, dyt, dxt);
  } else {
    bn.backward(exec, xt, dyt, dxt);
  }
  allreduceSum(params[0].grad, gradComm);
  allreduceSum(params[1].grad, gradComm);
  return {gatherToGlobal(yt, grid.spatialComm()),
          gatherToGlobal(dxt, grid.spatialComm()),
          toHost(params[0].grad),
          toHost(params[1].grad),
          toHost(buffers[0].value),
          toHost(buffers[1].value)};
}

void expectSameVector(const Vector& got, const Vector& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double err = maxRelativeError(got, want);
  EXPECT_LE(err, tol) << what << ": max relative error " << err;
}

const Index3 kExtents{5, 4, 6};
const int kChannels = 3;

TEST(BatchNorm3d, GlobalStatisticsMatchOneRankOverTheWholeMiniBatch) {
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "inference");
    const int ran = forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
      const int n = 2, G = grid.numGroups();
      const auto x = randomGlobal<double>("x", n * G, kChannels, kExtents, 11, 3, 6);
      const auto dy = randomGlobal<double>("dy", n * G, kChannels, kExtents, 12);
      const BnState state = randomState(kChannels, 13);
      const BnRun want = runBatchNorm(selfGrid(), {}, training, state, x, dy, MPI_COMM_SELF);
      const BnRun got = runBatchNorm(grid, {}, training, state, samples(x, grid.group() * n, n),
                                     samples(dy, grid.group() * n, n), grid.worldComm());
      expectSameArray(got.y, samples(want.y, grid.group() * n, n), 1e-12, "output");
      expectSameArray(got.dx, samples(want.dx, grid.group() * n, n), 1e-12, "input gradient");
      expectSameVector(got.dgamma, want.dgamma, 1e-12, "weight gradient");
      expectSameVector(got.dbeta, want.dbeta, 1e-12, "bias gradient");
      expectSameVector(got.runningMean, want.runningMean, 1e-12, "running mean");
      expectSameVector(got.runningVar, want.runningVar, 1e-12, "running variance");
    });
    EXPECT_GE(ran, 1);
  }
}

TEST(BatchNorm3d, PerGroupStatisticsMatchOneRankOverTheGroupsSamples) {
  BN::Options perGroup;
  perGroup.statistics = BN::Statistics::PerSpatialGroup;
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const auto x = randomGlobal<double>("x", 2, kChannels, kExtents, 21 + grid.group(), 3, 6);
    const auto dy = randomGlobal<double>("dy", 2, kChannels, kExtents, 31 + grid.group());
    const BnState state = randomState(kChannels, 41);
    const BnRun want = runBatchNorm(selfGrid(), perGroup, true, state, x, dy, MPI_COMM_SELF);
    const BnRun got = runBatchNorm(grid, perGroup, true, state, x, dy, grid.spatialComm());
    expectSameArray(got.y, want.y, 1e-12, "output");
    expectSameArray(got.dx, want.dx, 1e-12, "input gradient");
    expectSameVector(got.dgamma, want.dgamma, 1e-12, "weight gradient");
    expectSameVector(got.dbeta, want.dbeta, 1e-12, "bias gradient");
    expectSameVector(got.runningMean, want.runningMean, 1e-12, "running mean");
    expectSameVector(got.runningVar, want.runningVar, 1e-12, "running variance");
  });
}

TEST(BatchNorm3d, BackwardWeightsThenBackwardDataEqualBackward) {
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "inference");
    forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
      const auto x = randomGlobal<double>("x", 2, kChannels, kExtents, 71 + grid.group(), 3, 6);
      const auto dy = randomGlobal<double>("dy", 2, kChannels, kExtents, 72 + grid.group());
      const BnState state = randomState(kChannels, 73);
      const BnRun whole = runBatchNorm(grid, {}, training, state, x, dy, grid.worldComm());
      const BnRun split = runBatchNorm(grid, {}, training, state, x, dy, grid.worldComm(), true);
      expectSameArray(split.dx, whole.dx, 0, "input gradient");
      expectSameVector(split.dgamma, whole.dgamma, 0, "weight gradient");
      expectSameVector(split.dbeta, whole.dbeta, 0, "bias gradient");
    });
  }
}

TEST(BatchNorm3d, InferenceUsesTheRunningStatisticsAndKeepsThem) {
  const auto x = randomGlobal<double>("x", 2, kChannels, kExtents, 51, 3, 6);
  const auto dy = randomGlobal<double>("dy", 2, kChannels, kExtents, 52);
  const BnState s = randomState(kChannels, 53);
  BN::Options o;
  const BnRun r = runBatchNorm(selfGrid(), o, false, s, x, dy, MPI_COMM_SELF);
  double err = 0;
  for (std::size_t n = 0; n < x.extent(0); ++n)
    for (int c = 0; c < kChannels; ++c)
      for (Index d = 0; d < kExtents[0]; ++d)
        for (Index h = 0; h < kExtents[1]; ++h)
          for (Index w = 0; w < kExtents[2]; ++w) {
            const double want = (x(n, c, d, h, w) - s.runningMean(c)) /
                                    std::sqrt(s.runningVar(c) + o.eps) * s.gamma(c) +
                                s.beta(c);
            err = std::max(err, std::abs(r.y(n, c, d, h, w) - want));
          }
  EXPECT_LE(err, 1e-13);
  expectSameVector(r.runningMean, s.runningMean, 0, "running mean");
  expectSameVector(r.runningVar, s.runningVar, 0, "running variance");
}

// Central differences of L = <dy, y> with respect to x, gamma and beta, at a few coordinates.
void expectFiniteDifferenceGradients(bool training) {
  SCOPED_TRACE(training ? "training" : "inference");
  const Index3 e{3, 2, 4};
  const auto x = randomGlobal<double>("x", 2, kChannels, e, 61, 3, 6);
  const auto dy = randomGlobal<double>("dy", 2, kChannels, e, 62);
  const BnState s = randomState(kChannels, 63);
  const BnRun r = runBatchNorm(selfGrid(), {}, training, s, x, dy, MPI_COMM_SELF);
  auto loss = [&](const GlobalArray<double>& xx, const BnState& ss) {
    return dot(dy, runBatchNorm(selfGrid(), {}, training, ss, xx, dy, MPI_COMM_SELF).y);
  };
  const double h = 1e-6, tol = 1e-6;
  auto xp = randomGlobal<double>("x+", 2, kChannels, e, 61, 3, 6);
  std::mt19937 rng(64);
  std::uniform_int_distribution<std::size_t> pick(0, x.size() - 1);
  for (int t = 0; t < 10; ++t) {
    const std::size_t i = pick(rng);
    xp.data()[i] = x.data()[i] + h;
    const double up = loss(xp, s);
    xp.data()[i] = x.data()[i] - h;
    const double down = loss(xp, s);
    xp.data()[i] = x.data()[i];
    EXPECT_NEAR((up - down) / (2 * h), r.dx.data()[i], tol) << "x element " << i;
  }
  for (int c = 0; c < kChannels; ++c) {
    for (bool isGamma : {true, false}) {
      BnState p = randomState(kChannels, 63), m = randomState(kChannels, 63);
      (isGamma ? p.gamma : p.beta)(c) += h;
      (isGamma ? m.gamma : m.beta)(c) -= h;
      EXPECT_NEAR((loss(x, p) - loss(x, m)) / (2 * h), (isGamma ? r.dgamma : r.dbeta)(c), tol)
          << (isGamma ? "gamma " : "beta ") << c;
    }
  }
}

TEST(BatchNorm3d, GradientsMatchFiniteDifferencesInTraining) {
  expectFiniteDifferenceGradients(true);
}

TEST(BatchNorm3d, GradientsMatchFiniteDifferencesInInference) {
  expectFiniteDifferenceGradients(false);
}

TEST(BatchNorm3d, BadConfigurationsGiveOneLineNamingTheLayer) {
  const ProcessGrid& one = selfGrid();
  const TensorShape shape{2, 3, {2, 2, 2}};
  BN::Options badMomentum;
  badMomentum.momentum = 1.5;
  expectLayerError([&] { BN(one, "b1", shape, badMomentum); }, "BatchNorm3d 'b1'", "momentum");
  BN::Options badEps;
  badEps.eps = 0;
  expectLayerError([&] { BN(one, "b2", shape, badEps); }, "BatchNorm3d 'b2'", "eps");
  expectLayerError(
      [&] {
        BN(one, "b3", {2, 0, {2, 2, 2}}, {});
      },
      "BatchNorm3d 'b3'", "no channels");
  TestExecSpace exec;
  {
    BN bn(one, "b4", shape, {});
    const auto x =
        createDistTensor<double, TestDevice>("x", 2, 4, bn.inputDecomposition(), {0, 0, 0});
    const auto y =
        createDistTensor<double, TestDevice>("y", 2, 4, bn.inputDecomposition(), {0, 0, 0});
    expectLayerError([&] { bn.forward(exec, x, y); }, "BatchNorm3d 'b4'", "channel mismatch");
  }
  {
    BN bn(one, "b5", {1, 3, {1, 1, 1}}, {});
    const auto x =
        createDistTensor<double, TestDevice>("x", 1, 3, bn.inputDecomposition(), {0, 0, 0});
    expectLayerError([&] { bn.forward(exec, x, x); }, "BatchNorm3d 'b5'",
                     "one value per channel in training");
  }
}

}  // namespace
}  // namespace hybrid3d::test
