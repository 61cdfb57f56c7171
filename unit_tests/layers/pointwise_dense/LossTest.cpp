// Losses: the mean over the global mini-batch (G groups, each its own samples) equals the
// 1-rank loss over all samples, on every grid; gradients match finite differences; a NaN
// anywhere shows on every rank; a bad label is refused on every rank.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/layers/MseLoss.hpp>
#include <hybrid3d/layers/SoftmaxCrossEntropy.hpp>

#include "GridCases.hpp"
#include "Invariance.hpp"
#include "TestDevice.hpp"
#include "TestHelpers.hpp"

namespace hybrid3d::test {
namespace {

using Exec = TestExecSpace;
using Host = Kokkos::View<double*, Kokkos::HostSpace>;
const Index3 kExtents{4, 3, 5};
const int kClasses = 3;

// Labels in [0, C) drawn from a seed, as an (N, 1, D, H, W) global array.
GlobalArray<int> randomLabels(int n, unsigned seed) {
  const auto u = randomGlobal<double>("u", n, 1, kExtents, seed, 0.0, double(kClasses));
  GlobalArray<int> l("labels", n, 1, kExtents[0], kExtents[1], kExtents[2]);
  for (std::size_t i = 0; i < l.size(); ++i) l.data()[i] = int(u.data()[i]);
  return l;
}

// Loss and dlogits of softmax cross-entropy on `grid` for this group's samples.
std::pair<double, GlobalArray<double>> runCrossEntropy(const ProcessGrid& grid,
                                                       const GlobalArray<double>& logits,
                                                       const GlobalArray<int>& labels) {
  const int N = int(logits.extent(0));
  const SoftmaxCrossEntropy<double, TestDevice> loss(grid, "head_loss", {N, kClasses, kExtents});
  const BlockDecomposition& dec = loss.inputDecomposition();
  auto x = createDistTensor<double, TestDevice>("x", N, kClasses, dec, grid.coords(),
                                                GhostWidths::uniform(1));
  auto l = createDistTensor<int, TestDevice>("l", N, 1, dec, grid.coords(), {{0, 1, 0}, {1, 0, 0}});
  auto dx = createDistTensor<double, TestDevice>("dx", N, kClasses, dec, grid.coords());
  scatterFromGlobal(logits, x);
  scatterFromGlobal(labels, l);
  const double value = loss.forwardBackward(Exec(), x, l, dx);
  EXPECT_EQ(loss.forward(Exec(), x, l), value);
  return {value, gatherToGlobal(dx, grid.spatialComm())};
}

TEST(SoftmaxCrossEntropy, MatchesOneRankOnEveryGrid) {
  const int ran = forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase& c) {
    const int N = 2, total = N * c.groups;
    // Large logits: the log-sum-exp must subtract the maximum.
    const auto x = randomGlobal<double>("x", total, kClasses, kExtents, 1, -800.0, 800.0);
    const auto labels = randomLabels(total, 2);
    const Index first = grid.group() * N;
    const auto got = runCrossEntropy(grid, samples(x, first, N), samples(labels, first, N));
    const auto want = runCrossEntropy(selfGrid(), x, labels);
    EXPECT_TRUE(std::isfinite(got.first));
    EXPECT_NEAR(got.first, want.first, 1e-12 * std::abs(want.first));
    expectSameArray(got.second, samples(want.second, first, N), 1e-12, "dlogits");
  });
  EXPECT_GE(ran, 1);
}

std::pair<double, Host> runMse(const ProcessGrid& grid, const FeatureView<double, TestDevice>& p,
                               const FeatureView<double, TestDevice>& t) {
  const MseLoss<double, TestDevice> loss(grid, "mse", int(p.extent(0)), int(p.extent(1)));
  const FeatureView<double, TestDevice> g("g", p.extent(0), p.extent(1));
  const double value = loss.forward(Exec(), p, t);
  loss.backward(Exec(), p, t, g);
  return {value, hostCopy(g)};
}

TEST(MseLoss, MatchesOneRankOnEveryGrid) {
  const int ran = forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase& c) {
    const int N = 3, F = 4, total = N * c.groups;
    const auto p = randomFeatures("p", total, F, 3), t = randomFeatures("t", total, F, 4);
    const Index first = grid.group() * N;
    const auto got = runMse(grid, rows(p, first, N), rows(t, first, N));
    const auto want = runMse(selfGrid(), p, t);
    EXPECT_NEAR(got.first, want.first, 1e-14 * want.first);
    Host wantRows("want", N * F);
    std::copy(want.second.data() + first * F, want.second.data() + (first + N) * F,
              wantRows.data());
    EXPECT_LE(maxRelativeError(got.second, wantRows), 1e-14);
  });
  EXPECT_GE(ran, 1);
}

TEST(MseLoss, GradientMatchesFiniteDifferences) {
  const FeatureView<double, TestDevice> p = randomFeatures("p", 3, 4, 5),
                                        t = randomFeatures("t", 3, 4, 6);
  const Host g = runMse(selfGrid(), p, t).second;
  Host ph = hostCopy(p);
  const double h = 1e-6;
  for (Index i = 0; i < Index(ph.size()); i += 2) {
    const double saved = ph(i);
    ph(i) = saved + h;
    fillFrom(p, ph);
    const double lp = runMse(selfGrid(), p, t).first;
    ph(i) = saved - h;
    fillFrom(p, ph);
    const double lm = runMse(selfGrid(), p, t).first;
    ph(i) = saved;
    fillFrom(p, ph);
    EXPECT_NEAR(g(i), (lp - lm) / (2 * h), 1e-8) << "entry " << i;
  }
}

TEST(SoftmaxCrossEntropy, GradientMatchesFiniteDifferences) {
  auto x = randomGlobal<double>("x", 2, kClasses, kExtents, 7, -3.0, 3.0);
  const auto labels = randomLabels(2, 8);
  const auto g = runCrossEntropy(selfGrid(), x, labels).second;
  const double h = 1e-6;
  for (std::size_t i = 0; i < x.size(); i += 17) {
    const double saved = x.data()[i];
    x.data()[i] = saved + h;
    const double lp = runCrossEntropy(selfGrid(), x, labels).first;
    x.data()[i] = saved - h;
    const double lm = runCrossEntropy(selfGrid(), x, labels).first;
    x.data()[i] = saved;
    EXPECT_NEAR(g.data()[i], (lp - lm) / (2 * h), 1e-9) << "entry " << i;
  }
}

// A NaN in one voxel of one rank's logits, or one prediction of one group, makes the loss NaN
// on every rank of the world, so a trainer testing std::isfinite(loss) stops everywhere.
TEST(Losses, NaNOnOneRankIsSeenOnEveryRank) {
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const bool poison = grid.worldRank() == grid.worldSize() - 1;
    auto x = randomGlobal<double>("x", 2, kClasses, kExtents, 1);
    const auto labels = randomLabels(2, 2);
    const SoftmaxCrossEntropy<double, TestDevice> ce(grid, "head_loss", {2, kClasses, kExtents});
    const BlockDecomposition& dec = ce.inputDecomposition();
    auto xt = createDistTensor<double, TestDevice>("x", 2, kClasses, dec, grid.coords());
    auto lt = createDistTensor<int, TestDevice>("l", 2, 1, dec, grid.coords());
    scatterFromGlobal(x, xt);
    scatterFromGlobal(labels, lt);
    if (poison && !xt.owned().empty()) {
      auto v = Kokkos::subview(xt.view(), 1, 2, 0, 0, 0);
      Kokkos::deep_copy(v, std::numeric_limits<double>::quiet_NaN());
    }
    // Some rank owns no voxel on thin grids; then poison is a no-op there and the sum is
    // finite, which the test accepts only in that case.
    const int poisoned = allTrue(!(poison && !xt.owned().empty()), grid.worldComm()) ? 0 : 1;
    const double l = ce.forward(Exec(), xt, lt);
    EXPECT_EQ(std::isnan(l), poisoned == 1);

    // Predictions are replicated within a group, so a NaN appears on every rank of one
    // group (here the last); the data-parallel sum carries it to every rank of the world.
    const MseLoss<double, TestDevice> mse(grid, "mse", 2, 4);
    const FeatureView<double, TestDevice> p = randomFeatures("p", 2, 4, 3),
                                          t = randomFeatures("t", 2, 4, 4);
    if (grid.group() == grid.numGroups() - 1)
      Kokkos::deep_copy(Kokkos::subview(p, 1, 3), std::numeric_limits<double>::quiet_NaN());
    EXPECT_TRUE(std::isnan(mse.forward(Exec(), p, t)));
  });
}

TEST(SoftmaxCrossEntropy, RefusesLabelsOutsideTheClasses) {
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const auto x = randomGlobal<double>("x", 1, kClasses, kExtents, 1);
    auto labels = randomLabels(1, 2);
    labels(0, 0, 3, 2, 4) = kClasses;  // one bad voxel, owned by one rank only
    const SoftmaxCrossEntropy<double, TestDevice> ce(grid, "head_loss", {1, kClasses, kExtents});
    const BlockDecomposition& dec = ce.inputDecomposition();
    auto xt = createDistTensor<double, TestDevice>("x", 1, kClasses, dec, grid.coords());
    auto lt = createDistTensor<int, TestDevice>("l", 1, 1, dec, grid.coords());
    scatterFromGlobal(x, xt);
    scatterFromGlobal(labels, lt);
    try {
      ce.forward(Exec(), xt, lt);
      ADD_FAILURE() << "bad label accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("head_loss"), std::string::npos) << e.what();
    }
  });
}

}  // namespace
}  // namespace hybrid3d::test
