// MaxPool3d and AvgPool3d: decomposition invariance (outputs and input gradients equal the
// 1-rank run on every grid, for overlapping windows, padding and uneven splits), PyTorch's tie
// and padding rules for max pooling, finite-difference gradients, and bad configurations.

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/layers/AvgPool3d.hpp>
#include <hybrid3d/layers/MaxPool3d.hpp>

#include "GridCases.hpp"
#include "LayerRun.hpp"
#include "LayerTensors.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

struct PoolConfig {
  const char* name;
  bool max;  // MaxPool3d, else AvgPool3d
  int kernel, stride, padding;
  bool countIncludePad;
  Index3 extents;
  Window window() const { return Window::cubic(kernel, stride, padding); }
};

// Forward and backward on `grid` from this group's global x and dy. y and dy carry ghosts of
// their own (as the next layer's would): the layer must touch only their owned cells.
template <class Layer>
ForwardBackward runPool(const ProcessGrid& grid, const typename Layer::Options& options,
                        const GlobalArray<double>& x, const GlobalArray<double>& dy) {
  const GhostWidths nextLayers{{1, 0, 1}, {0, 1, 1}};
  return forwardBackward(Layer(grid, "pool", shapeOf(x), options), grid, x, dy, nextLayers);
}

ForwardBackward runConfig(const ProcessGrid& grid, const PoolConfig& c,
                          const GlobalArray<double>& x, const GlobalArray<double>& dy) {
  if (c.max)
    return runPool<MaxPool3d<double, TestDevice>>(grid, {c.kernel, c.stride, c.padding}, x, dy);
  return runPool<AvgPool3d<double, TestDevice>>(
      grid, {c.kernel, c.stride, c.padding, c.countIncludePad}, x, dy);
}

// Output and input gradient of `c` on `grid` equal the 1-rank run on the same samples.
void expectSameAsOneRank(const ProcessGrid& grid, const PoolConfig& c, const GlobalArray<double>& x,
                         const GlobalArray<double>& dy) {
  const ForwardBackward got = runConfig(grid, c, x, dy);
  expectSameOutputAndGradient(got, runConfig(selfGrid(), c, x, dy), 1e-12);
}

// Each group pools its own samples; both must equal the 1-rank run on those samples.
void expectInvariance(const PoolConfig& c) {
  SCOPED_TRACE(c.name);
  const int ran = forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const unsigned seed = 17 + 2 * grid.group();
    const auto x = randomGlobal<double>("x", 2, 3, c.extents, seed);
    const auto dy =
        randomGlobal<double>("dy", 2, 3, windowOutputExtents(c.extents, c.window()), seed + 1);
    expectSameAsOneRank(grid, c, x, dy);
  });
  EXPECT_GE(ran, 1);
}

TEST(MaxPool3d, OutputAndGradientMatchOneRankOnEveryGrid) {
  for (const PoolConfig& c : {PoolConfig{"max 2/2/0", true, 2, 2, 0, true, {7, 6, 9}},
                              PoolConfig{"max 3/1/1", true, 3, 1, 1, true, {7, 6, 5}},
                              PoolConfig{"max 3/2/1", true, 3, 2, 1, true, {9, 7, 6}}})
    expectInvariance(c);
}

TEST(AvgPool3d, OutputAndGradientMatchOneRankOnEveryGrid) {
  for (const PoolConfig& c :
       {PoolConfig{"avg 3/2/1", false, 3, 2, 1, true, {9, 7, 6}},
        PoolConfig{"avg 3/2/1 excluding pad", false, 3, 2, 1, false, {7, 6, 9}},
        PoolConfig{"avg 3/1/1 excluding pad", false, 3, 1, 1, false, {7, 6, 5}},
        PoolConfig{"avg 2/2/0", false, 2, 2, 0, true, {7, 6, 9}}})
    expectInvariance(c);
}

TEST(Pool3d, OutputAndGradientMatchOneRankOnOneVoxelThinSubdomains) {
  // One input voxel per rank along every cut dimension (max 3/1/1), or one output voxel per rank
  // (avg 3/2/1): the ghosts reach exactly the neighbours.
  forEachGrid(standardGridCases(), [](const ProcessGrid& grid, const GridCase& g) {
    const Int3& p = g.spatial;
    for (const PoolConfig& c :
         {PoolConfig{"max 3/1/1", true, 3, 1, 1, true, {p[0], p[1], p[2] + 1}},
          PoolConfig{"avg 3/2/1", false, 3, 2, 1, true, {2 * p[0], 2 * p[1], 2 * p[2]}}}) {
      SCOPED_TRACE(c.name);
      const auto x = randomGlobal<double>("x", 2, 2, c.extents, 5 + grid.group());
      const auto dy = randomGlobal<double>("dy", 2, 2, windowOutputExtents(c.extents, c.window()),
                                           9 + grid.group());
      expectSameAsOneRank(grid, c, x, dy);
    }
  });
}

TEST(Pool3d, OutputAndGradientMatchOneRankWhereOnlyPerRankGhostsFit) {
  // Issue 9: grids where each rank's ghosts lie on its neighbours but the widest rank's would
  // not (D = 9 on 6x1x1, 3 on 3 ranks, 5 on 4): refused before, now equal to the 1-rank run.
  const int ran =
      forEachGrid(perRankGhostGridCases(), [](const ProcessGrid& grid, const GridCase&) {
        const Index3 e = stridedWindowExtents(grid.dims());
        for (const PoolConfig& c : {PoolConfig{"avg 3/2/1", false, 3, 2, 1, true, e},
                                    PoolConfig{"avg 3/2/1 excluding pad", false, 3, 2, 1, false, e},
                                    PoolConfig{"max 3/2/1", true, 3, 2, 1, true, e}}) {
          SCOPED_TRACE(c.name);
          const BlockDecomposition in(e, grid.dims());
          const BlockDecomposition out(windowOutputExtents(e, c.window()), grid.dims());
          EXPECT_TRUE(refusedByWidestRank(in, windowGhosts(in, out, c.window(), "pool")));
          const auto x = randomGlobal<double>("x", 2, 3, e, 31 + grid.group());
          const auto dy = randomGlobal<double>("dy", 2, 3, out.globalExtents(), 37 + grid.group());
          expectSameAsOneRank(grid, c, x, dy);
        }
      });
  EXPECT_EQ(ran, worldSize() >= 8 ? 8 : worldSize() >= 4 ? 3 : 0);
}

TEST(Pool3d, OutputAndGradientMatchOneRankWhereARankOwnsOutputButNoInput) {
  // A 2/1/1 window grows the extent by one: over p - 1 input voxels on p ranks the last rank
  // owns an output voxel and no input; it reads the rank below and the padding. (Stride 2 or
  // k3 p1 never make the output larger than the input: there a rank without input owns no
  // output, which the invariance tests above cover on 3x1x1.)
  const int ran = forEachGrid(emptyInputGridCases(), [](const ProcessGrid& grid, const GridCase&) {
    const Index3 e = upsamplingInputExtents(grid.dims());
    for (const PoolConfig& c : {PoolConfig{"max 2/1/1", true, 2, 1, 1, true, e},
                                PoolConfig{"avg 2/1/1", false, 2, 1, 1, true, e},
                                PoolConfig{"avg 2/1/1 excluding pad", false, 2, 1, 1, false, e}}) {
      SCOPED_TRACE(c.name);
      const BlockDecomposition in(e, grid.dims());
      const BlockDecomposition out(windowOutputExtents(e, c.window()), grid.dims());
      EXPECT_TRUE(someRankOwnsOutputButNoInput(in, out));
      const auto x = randomGlobal<double>("x", 2, 3, e, 41 + grid.group());
      const auto dy = randomGlobal<double>("dy", 2, 3, out.globalExtents(), 43 + grid.group());
      expectSameAsOneRank(grid, c, x, dy);
    }
  });
  EXPECT_EQ(ran, worldSize() >= 8 ? 8 : worldSize() >= 4 ? 4 : worldSize() >= 2 ? 1 : 0);
}

TEST(Pool3d, RefusesOnEveryRankANeedTwoRanksAway) {
  // D = 4 on 4 ranks: rank 1's one output reads inputs 1..3, and input 3 lies on rank 3.
  const int ran = forEachGrid({{{4, 1, 1}, 1}}, [](const ProcessGrid& grid, const GridCase&) {
    bool threw = false;
    try {
      AvgPool3d<double, TestDevice> pool(grid, "pool1", {1, 2, {4, 3, 3}}, {3, 2, 1, true});
    } catch (const Error& e) {
      threw = std::string(e.what()).find(
                  "AvgPool3d 'pool1': ghost width 2 on the high side of D "
                  "of rank 1 reaches past the neighbouring rank") != std::string::npos;
      if (!threw) ADD_FAILURE() << e.what();
    }
    EXPECT_TRUE(allTrue(threw, grid.worldComm()));
  });
  EXPECT_EQ(ran, worldSize() >= 4 ? 1 : 0);
}

// PyTorch's pooling of a whole array, written plainly from its documentation. Max: padding
// never wins, the first maximum in (d, h, w) window order takes a tie and receives dy.
// Average: the divisor is the window's volume (count_include_pad) or its cells in the domain.
ForwardBackward naivePool(const GlobalArray<double>& x, const PoolConfig& c,
                          const GlobalArray<double>& dy) {
  ForwardBackward r{
      GlobalArray<double>("y", dy.extent(0), dy.extent(1), dy.extent(2), dy.extent(3),
                          dy.extent(4)),
      GlobalArray<double>("dx", x.extent(0), x.extent(1), x.extent(2), x.extent(3), x.extent(4))};
  const Index k = c.kernel, s = c.stride, p = c.padding;
  auto inDomain = [&](Index d, Index h, Index w) {
    return d >= 0 && h >= 0 && w >= 0 && d < Index(x.extent(2)) && h < Index(x.extent(3)) &&
           w < Index(x.extent(4));
  };
  for (std::size_t n = 0; n < dy.extent(0); ++n)
    for (std::size_t ch = 0; ch < dy.extent(1); ++ch)
      for (Index od = 0; od < Index(dy.extent(2)); ++od)
        for (Index oh = 0; oh < Index(dy.extent(3)); ++oh)
          for (Index ow = 0; ow < Index(dy.extent(4)); ++ow) {
            double best = -INFINITY, sum = 0;
            Index bd = -1, bh = -1, bw = -1, inside = 0;
            for (Index d = od * s - p; d < od * s - p + k; ++d)
              for (Index h = oh * s - p; h < oh * s - p + k; ++h)
                for (Index w = ow * s - p; w < ow * s - p + k; ++w) {
                  if (!inDomain(d, h, w)) continue;
                  ++inside;
                  sum += x(n, ch, d, h, w);
                  if (bd < 0 || x(n, ch, d, h, w) > best) {
                    best = x(n, ch, d, h, w);
                    bd = d, bh = h, bw = w;
                  }
                }
            const double divisor = c.countIncludePad ? double(k * k * k) : double(inside);
            r.y(n, ch, od, oh, ow) = c.max ? best : sum / divisor;
            if (c.max) {
              r.dx(n, ch, bd, bh, bw) += dy(n, ch, od, oh, ow);
              continue;
            }
            for (Index d = od * s - p; d < od * s - p + k; ++d)
              for (Index h = oh * s - p; h < oh * s - p + k; ++h)
                for (Index w = ow * s - p; w < ow * s - p + k; ++w)
                  if (inDomain(d, h, w)) r.dx(n, ch, d, h, w) += dy(n, ch, od, oh, ow) / divisor;
          }
  return r;
}

TEST(MaxPool3d, TiesAndPaddingFollowPyTorchOnEveryGrid) {
  // Values from {-3, -2, -1}: most windows hold ties, and a padding of zeros would win.
  for (const PoolConfig& c : {PoolConfig{"max 3/2/1", true, 3, 2, 1, true, {9, 7, 6}},
                              PoolConfig{"max 2/2/0", true, 2, 2, 0, true, {7, 6, 9}},
                              PoolConfig{"max 3/1/1", true, 3, 1, 1, true, {7, 6, 5}}}) {
    SCOPED_TRACE(c.name);
    forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
      auto x = randomGlobal<double>("x", 2, 2, c.extents, 31 + grid.group(), 0, 3);
      for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = std::floor(x.data()[i]) - 3;
      const auto dy = randomGlobal<double>("dy", 2, 2, windowOutputExtents(c.extents, c.window()),
                                           41 + grid.group());
      const ForwardBackward got = runConfig(grid, c, x, dy);
      const ForwardBackward want = naivePool(x, c, dy);
      expectSameArray(got.y, want.y, 0, "output");
      expectSameArray(got.dx, want.dx, 1e-15, "input gradient");
    });
  }
}

TEST(AvgPool3d, DivisorFollowsPyTorchOnEveryGrid) {
  // With and without the padded cells in the divisor, against the plain whole-array pooling.
  for (const PoolConfig& c :
       {PoolConfig{"avg 3/2/1", false, 3, 2, 1, true, {9, 7, 6}},
        PoolConfig{"avg 3/2/1 excluding pad", false, 3, 2, 1, false, {9, 7, 6}},
        PoolConfig{"avg 4/3/2 excluding pad", false, 4, 3, 2, false, {7, 6, 9}}}) {
    SCOPED_TRACE(c.name);
    forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
      const auto x = randomGlobal<double>("x", 2, 2, c.extents, 51 + grid.group());
      const auto dy = randomGlobal<double>("dy", 2, 2, windowOutputExtents(c.extents, c.window()),
                                           61 + grid.group());
      const ForwardBackward got = runConfig(grid, c, x, dy);
      const ForwardBackward want = naivePool(x, c, dy);
      expectSameArray(got.y, want.y, 1e-14, "output");
      expectSameArray(got.dx, want.dx, 1e-14, "input gradient");
    });
  }
}

// Central differences of L(x) = <dy, pool(x)> at random coordinates against backward's dx.
void expectFiniteDifferenceGradient(const PoolConfig& c) {
  SCOPED_TRACE(c.name);
  const Index3 e = c.extents;
  const auto x = randomGlobal<double>("x", 2, 2, e, 3);
  const auto dy = randomGlobal<double>("dy", 2, 2, windowOutputExtents(e, c.window()), 4);
  const ForwardBackward r = runConfig(selfGrid(), c, x, dy);
  auto xp = randomGlobal<double>("x+", 2, 2, e, 3);
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::size_t> pick(0, x.size() - 1);
  const double h = 1e-6;
  for (int t = 0; t < 12; ++t) {
    const std::size_t i = pick(rng);
    xp.data()[i] = x.data()[i] + h;
    const double up = dot(dy, runConfig(selfGrid(), c, xp, dy).y);
    xp.data()[i] = x.data()[i] - h;
    const double down = dot(dy, runConfig(selfGrid(), c, xp, dy).y);
    xp.data()[i] = x.data()[i];
    EXPECT_NEAR((up - down) / (2 * h), r.dx.data()[i], 1e-7) << "element " << i;
  }
}

TEST(MaxPool3d, GradientMatchesFiniteDifferences) {
  expectFiniteDifferenceGradient({"max 2/2/0", true, 2, 2, 0, true, {4, 5, 6}});
  expectFiniteDifferenceGradient({"max 3/2/1", true, 3, 2, 1, true, {5, 4, 5}});
}

TEST(AvgPool3d, GradientMatchesFiniteDifferences) {
  expectFiniteDifferenceGradient({"avg 3/2/1", false, 3, 2, 1, true, {5, 4, 5}});
  expectFiniteDifferenceGradient({"avg 3/1/1 excluding pad", false, 3, 1, 1, false, {4, 3, 5}});
}

TEST(Pool3d, BadConfigurationsGiveOneLineNamingTheLayer) {
  const ProcessGrid& one = selfGrid();
  const TensorShape small{1, 2, {1, 4, 4}};
  expectLayerError(
      [&] {
        MaxPool3d<double, TestDevice>(one, "p1", small, {2, 2, 0});
      },
      "MaxPool3d 'p1'", "kernel larger than the input");
  expectLayerError(
      [&] {
        AvgPool3d<double, TestDevice>(one, "p2", small, {4, 1, 1, true});
      },
      "AvgPool3d 'p2'", "kernel larger than the padded input");
  expectLayerError(
      [&] {
        MaxPool3d<double, TestDevice>(one, "p3", {1, 2, {6, 6, 6}}, {2, 2, 2});
      },
      "MaxPool3d 'p3'", "padding more than half the kernel");
  expectLayerError(
      [&] {
        AvgPool3d<double, TestDevice>(one, "p4", {1, 2, {6, 6, 6}}, {3, 2, 2, true});
      },
      "AvgPool3d 'p4'", "padding more than half the kernel");
  expectLayerError(
      [&] {
        MaxPool3d<double, TestDevice>(one, "p5", {1, 2, {6, 6, 6}}, {2, 0, 0});
      },
      "MaxPool3d 'p5'", "zero stride");
  // A tensor with other channels than the layer was built for.
  MaxPool3d<double, TestDevice> pool(one, "p6", {1, 2, {4, 4, 4}}, {2, 2, 0});
  const auto x =
      createDistTensor<double, TestDevice>("x", 1, 3, pool.inputDecomposition(), {0, 0, 0});
  const auto y =
      createDistTensor<double, TestDevice>("y", 1, 3, pool.outputDecomposition(), {0, 0, 0});
  expectLayerError([&] { pool.forward(TestExecSpace(), x, y); }, "MaxPool3d 'p6'",
                   "channel mismatch");
}

TEST(Pool3d, GridTooFineForTheHaloGivesOneLineNamingTheLayer) {
  // Extent 3 over 3 ranks: a 5-wide window needs two voxels on each side, beyond the neighbour.
  const int ran = forEachGrid({{{3, 1, 1}, 1}}, [](const ProcessGrid& grid, const GridCase&) {
    expectLayerError(
        [&] {
          MaxPool3d<double, TestDevice>(grid, "wide", {1, 1, {3, 4, 4}}, {5, 1, 2});
        },
        "MaxPool3d 'wide'", "grid too fine");
    expectLayerError(
        [&] {
          AvgPool3d<double, TestDevice>(grid, "wide", {1, 1, {3, 4, 4}}, {5, 1, 2, true});
        },
        "AvgPool3d 'wide'", "grid too fine");
  });
  if (worldSize() >= 3) {
    EXPECT_EQ(ran, 1);
  }
}

}  // namespace
}  // namespace hybrid3d::test
