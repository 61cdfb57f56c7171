// Decomposition invariance: outputs, input gradients and (world-summed) parameter gradients of
// Conv3d and ConvTranspose3d on every grid equal the 1-rank run, including uneven splits,
// 1-voxel-thin subdomains, two data-parallel groups and outputs that carry ghosts.
#include <gtest/gtest.h>

#include <hybrid3d/layers/Conv3d.hpp>
#include <hybrid3d/layers/ConvTranspose3d.hpp>
#include <hybrid3d/layers/Window.hpp>

#include "ConvHarness.hpp"
#include "GridCases.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

// The grids of the issue, each with one and two groups.
std::vector<GridCase> invarianceGrids() {
  std::vector<GridCase> cases;
  for (const Int3& g : std::vector<Int3>{{1, 1, 1}, {2, 1, 1}, {1, 2, 2}, {2, 2, 2}, {3, 1, 1}})
    for (int groups : {1, 2}) cases.push_back({g, groups});
  return cases;
}

struct ConvCase {
  int k, s, p;
  bool bias;
  Index3 extents;
  GhostWidths outGhosts;
  std::string name() const {
    return "k" + std::to_string(k) + " s" + std::to_string(s) + " p" + std::to_string(p) +
           (bias ? " bias " : " ") + toString(extents) + (outGhosts.none() ? "" : " ghosted y");
  }
};

// Every case is legal on every grid above (a 3-voxel extent on 3 ranks is 1 voxel thin; a
// 2-voxel one leaves the third rank an empty box, as late layers do).
std::vector<ConvCase> convCases() {
  const GhostWidths one = GhostWidths::uniform(1);
  return {
      {1, 1, 0, true, {5, 4, 3}, {}},    // the direct 1^3 path
      {1, 1, 0, false, {5, 4, 3}, one},  // 1^3 through im2col (y has ghosts)
      {1, 2, 0, false, {7, 6, 5}, {}},  {3, 1, 1, false, {7, 6, 5}, one},
      {3, 1, 1, true, {3, 2, 2}, {}},   // 1-voxel-thin subdomains
      {3, 1, 1, true, {2, 5, 4}, one},  // an empty box on 3x1x1
      {3, 2, 1, false, {2, 5, 4}, {}},  {3, 2, 1, true, {7, 6, 5}, {}},
      {3, 1, 0, true, {7, 6, 5}, {}},  // no padding: output smaller than input
      {5, 1, 2, false, {7, 6, 5}, {}},  {5, 2, 2, true, {8, 7, 6}, one},
  };
}

TEST(Conv3d, OutputAndGradientsMatchOneRankOnEveryGrid) {
  const int ran = forEachGrid(invarianceGrids(), [](const ProcessGrid& grid, const GridCase&) {
    for (const ConvCase& c : convCases()) {
      Conv3d<double, TestDevice>::Options o;
      o.outChannels = 3;
      o.kernel = c.k;
      o.stride = c.s;
      o.padding = c.p;
      o.bias = c.bias;
      expectSameAsOneRank<Conv3d<double, TestDevice>>(grid, {2, 2, c.extents}, o, c.outGhosts,
                                                      c.name());
    }
  });
  EXPECT_GE(ran, 1);
}

TEST(ConvTranspose3d, OutputAndGradientsMatchOneRankOnEveryGrid) {
  const int ran = forEachGrid(invarianceGrids(), [](const ProcessGrid& grid, const GridCase&) {
    const GhostWidths one = GhostWidths::uniform(1);
    for (const ConvCase& c : std::vector<ConvCase>{{2, 2, 0, false, {5, 3, 4}, {}},
                                                   {2, 2, 0, true, {3, 2, 2}, one},  // thin
                                                   {3, 3, 0, true, {4, 5, 3}, {}},
                                                   {1, 1, 0, false, {3, 4, 5}, {}}}) {
      ConvTranspose3d<double, TestDevice>::Options o;
      o.outChannels = 3;
      o.kernel = c.k;
      o.stride = c.s;
      o.bias = c.bias;
      expectSameAsOneRank<ConvTranspose3d<double, TestDevice>>(grid, {2, 2, c.extents}, o,
                                                               c.outGhosts, c.name());
    }
  });
  EXPECT_GE(ran, 1);
}

TEST(Conv3d, OutputAndGradientsMatchOneRankWhereOnlyPerRankGhostsFit) {
  // Issue 9: a stride-2 convolution on grids where each rank's ghosts lie on its neighbours but
  // the widest rank's would not; with the halo overlapped too (each rank splits its own box).
  const Window w = Window::cubic(3, 2, 1);
  const int ran =
      forEachGrid(perRankGhostGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
        const Index3 e = stridedWindowExtents(grid.dims());
        const BlockDecomposition in(e, grid.dims()), out(windowOutputExtents(e, w), grid.dims());
        EXPECT_TRUE(refusedByWidestRank(in, windowGhosts(in, out, w, "conv")));
        for (bool overlap : {false, true}) {
          Conv3d<double, TestDevice>::Options o;
          o.outChannels = 3;
          o.kernel = 3;
          o.stride = 2;
          o.padding = 1;
          o.bias = overlap;
          o.overlap = overlap;
          expectSameAsOneRank<Conv3d<double, TestDevice>>(
              grid, {2, 2, e}, o, overlap ? GhostWidths::uniform(1) : GhostWidths{},
              overlap ? "k3 s2 p1 overlapped" : "k3 s2 p1");
        }
      });
  EXPECT_EQ(ran, worldSize() >= 8 ? 8 : worldSize() >= 4 ? 3 : 0);
}

TEST(ConvTranspose3d, OutputAndGradientsMatchOneRankWhereOnlyPerRankGhostsFit) {
  // Up-sampling D = 9 on 6 ranks (owned 2,2,2,1,1,1; outputs 3 each): rank 3's outputs 9..11
  // read inputs 4..5, both on rank 2, so it needs 2 low ghosts; the others need 0 or 1. The
  // widest low width 2 given to rank 4 would reach rank 2.
  const auto range = [](int, Index a, Index b) { return transposedInputRange(a, b, 2, 2, 0); };
  const int ran = forEachGrid({{{6, 1, 1}, 1}}, [&](const ProcessGrid& grid, const GridCase&) {
    const BlockDecomposition in({9, 2, 3}, grid.dims()), out({18, 4, 6}, grid.dims());
    EXPECT_TRUE(refusedByWidestRank(in, requiredGhosts(in, out, range, "up")));
    ConvTranspose3d<double, TestDevice>::Options o;
    o.outChannels = 3;
    o.kernel = 2;
    o.stride = 2;
    o.bias = true;
    expectSameAsOneRank<ConvTranspose3d<double, TestDevice>>(grid, {2, 2, {9, 2, 3}}, o, {},
                                                             "k2 s2 9x2x3");
  });
  EXPECT_EQ(ran, worldSize() >= 6 ? 1 : 0);
}

TEST(ConvTranspose3d, OutputAndGradientsMatchOneRankWhereARankOwnsOutputButNoInput) {
  // Up-sampling p - 1 voxels over p ranks: the last rank owns no input but one output voxel,
  // whose input lies on the rank below; its empty box carries that voxel as a low ghost. In
  // double and in float (against the 1-rank double run).
  const auto range = [](int, Index a, Index b) { return transposedInputRange(a, b, 2, 2, 0); };
  const int ran = forEachGrid(emptyInputGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const Index3 e = upsamplingInputExtents(grid.dims());
    const BlockDecomposition in(e, grid.dims()), out({2 * e[0], 2 * e[1], 2 * e[2]}, grid.dims());
    EXPECT_TRUE(someRankOwnsOutputButNoInput(in, out));
    EXPECT_NO_THROW(requiredGhosts(in, out, range, "up"));
    ConvTranspose3d<double, TestDevice>::Options o;
    o.outChannels = 3;
    o.bias = true;
    ConvTranspose3d<float, TestDevice>::Options of;
    of.outChannels = 3;
    of.bias = true;
    const GhostWidths next = GhostWidths::uniform(1);  // y as a following conv's input
    expectSameAsOneRank<ConvTranspose3d<double, TestDevice>>(grid, {2, 2, e}, o, next,
                                                             "k2 s2 double");
    expectSameAsOneRank<ConvTranspose3d<float, TestDevice>, ConvTranspose3d<double, TestDevice>>(
        grid, {2, 2, e}, of, o, {}, 1e-5, "k2 s2 float");
  });
  EXPECT_EQ(ran, worldSize() >= 8 ? 8 : worldSize() >= 4 ? 4 : worldSize() >= 2 ? 1 : 0);
}

TEST(Conv3d, OutputAndGradientsMatchOneRankWhereARankOwnsOutputButNoInput) {
  // A convolution padded past half its kernel (k3 p2, k1 p1) grows the extent by 2: over
  // p - 1 input voxels on p ranks the last rank owns an output voxel and no input; it reads the
  // rank below and the zero padding. (With padding up to half the kernel the output is never
  // larger than the input, and a rank without input owns no output.)
  const int ran = forEachGrid(emptyInputGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const Index3 e = upsamplingInputExtents(grid.dims());
    for (const Window w : {Window::cubic(3, 1, 2), Window::cubic(1, 1, 1)}) {
      const BlockDecomposition in(e, grid.dims()), out(windowOutputExtents(e, w), grid.dims());
      EXPECT_TRUE(someRankOwnsOutputButNoInput(in, out));
      Conv3d<double, TestDevice>::Options o;
      o.outChannels = 2;
      o.kernel = w.kernel[0];
      o.padding = w.padding[0];
      o.bias = true;
      expectSameAsOneRank<Conv3d<double, TestDevice>>(
          grid, {2, 2, e}, o, {},
          "k" + std::to_string(o.kernel) + " p" + std::to_string(o.padding));
    }
  });
  EXPECT_EQ(ran, worldSize() >= 8 ? 8 : worldSize() >= 4 ? 4 : worldSize() >= 2 ? 1 : 0);
}

}  // namespace
}  // namespace hybrid3d::test
