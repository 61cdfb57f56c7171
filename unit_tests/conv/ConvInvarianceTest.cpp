// Decomposition invariance: outputs, input gradients and (world-summed) parameter gradients of
// Conv3d and ConvTranspose3d on every grid equal the 1-rank run, including uneven splits,
// 1-voxel-thin subdomains, two data-parallel groups and outputs that carry ghosts.
#include <gtest/gtest.h>

#include <hybrid3d/layers/Conv3d.hpp>
#include <hybrid3d/layers/ConvTranspose3d.hpp>

#include "ConvHarness.hpp"
#include "GridCases.hpp"

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
      {1, 1, 0, true, {5, 4, 3}, {}},     // the direct 1^3 path
      {1, 1, 0, false, {5, 4, 3}, one},   // 1^3 through im2col (y has ghosts)
      {1, 2, 0, false, {7, 6, 5}, {}},
      {3, 1, 1, false, {7, 6, 5}, one},
      {3, 1, 1, true, {3, 2, 2}, {}},     // 1-voxel-thin subdomains
      {3, 1, 1, true, {2, 5, 4}, one},    // an empty box on 3x1x1
      {3, 2, 1, false, {2, 5, 4}, {}},
      {3, 2, 1, true, {7, 6, 5}, {}},
      {3, 1, 0, true, {7, 6, 5}, {}},     // no padding: output smaller than input
      {5, 1, 2, false, {7, 6, 5}, {}},
      {5, 2, 2, true, {8, 7, 6}, one},
  };
}

TEST(Conv3d, OutputAndGradientsMatchOneRankOnEveryGrid) {
  const int ran = forEachGrid(invarianceGrids(), [](const ProcessGrid& grid, const GridCase&) {
    for (const ConvCase& c : convCases()) {
      Conv3d<double>::Options o;
      o.outChannels = 3;
      o.kernel = c.k;
      o.stride = c.s;
      o.padding = c.p;
      o.bias = c.bias;
      expectSameAsOneRank<Conv3d<double>>(grid, {2, 2, c.extents}, o, c.outGhosts, c.name());
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
      ConvTranspose3d<double>::Options o;
      o.outChannels = 3;
      o.kernel = c.k;
      o.stride = c.s;
      o.bias = c.bias;
      expectSameAsOneRank<ConvTranspose3d<double>>(grid, {2, 2, c.extents}, o, c.outGhosts,
                                                   c.name());
    }
  });
  EXPECT_GE(ran, 1);
}

}  // namespace
}  // namespace hybrid3d::test
