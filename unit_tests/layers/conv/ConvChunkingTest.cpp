// The gemm workspace bound changes only how the work is cut: a tiny workspaceBytes (one output
// row per gemm), one that makes chunks straddle samples, and the default (one chunk) give the
// same outputs and gradients on every grid.
#include <gtest/gtest.h>

#include <hybrid3d/layers/Conv3d.hpp>
#include <hybrid3d/layers/ConvTranspose3d.hpp>

#include "ConvHarness.hpp"
#include "GridCases.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

using DoubleConv3d = Conv3d<double, TestDevice>;
using DoubleConvTranspose3d = ConvTranspose3d<double, TestDevice>;

std::vector<GridCase> chunkingGrids() {
  return {{{1, 1, 1}, 1}, {{2, 1, 1}, 1}, {{1, 2, 2}, 1}, {{3, 1, 1}, 1}};
}

template <class Layer>
void expectSameForEveryWorkspace(const ProcessGrid& grid, const TensorShape& in,
                                 typename Layer::Options options,
                                 const std::vector<std::size_t>& workspaces) {
  const TensorShape out = Layer(selfGrid(), "shape", in, options).outputShape();
  const auto x = randomGlobal<double>("x", in.batch, in.channels, in.extents, 21);
  const auto dy = randomGlobal<double>("dy", out.batch, out.channels, out.extents, 22);
  ConvResult want = runConv<Layer>(grid, in, options, x, dy, 9);
  sumOver(want.grads, grid.worldComm());
  EXPECT_EQ(Layer(grid, "big", in, options).rowsPerChunk() >= 1, true);
  for (std::size_t bytes : workspaces) {
    options.workspaceBytes = bytes;
    const std::string what = "workspace " + std::to_string(bytes) + " bytes";
    ConvResult got = runConv<Layer>(grid, in, options, x, dy, 9);
    sumOver(got.grads, grid.worldComm());
    expectSameConvResult(got, want, 1e-12, what);
  }
}

TEST(Conv3d, TinyWorkspaceGivesSameResultAsLargeOne) {
  // Sizes in rows of the 1-rank layout: kernel 3 on 2 channels, 3 outputs: 57 doubles per column.
  const TensorShape in{2, 2, {6, 5, 7}};
  DoubleConv3d::Options o;
  o.outChannels = 3;
  o.bias = true;
  // The workspace really cuts: 1 byte gives one row per chunk, the default all rows at once.
  o.workspaceBytes = 1;
  EXPECT_EQ(DoubleConv3d(selfGrid(), "tiny", in, o).rowsPerChunk(), 1);
  o.workspaceBytes = std::size_t(64) << 20;
  EXPECT_EQ(DoubleConv3d(selfGrid(), "big", in, o).rowsPerChunk(), 2 * 6 * 5);
  const std::size_t sevenRows = 7 * 57 * 7 * sizeof(double);  // chunks straddle samples
  EXPECT_EQ(DoubleConv3d(selfGrid(), "seven", in,
                         [&] {
                           auto s = o;
                           s.workspaceBytes = sevenRows;
                           return s;
                         }())
                .rowsPerChunk(),
            7);
  const int ran = forEachGrid(chunkingGrids(), [&](const ProcessGrid& grid, const GridCase&) {
    for (int stride : {1, 2}) {
      auto so = o;
      so.stride = stride;
      expectSameForEveryWorkspace<DoubleConv3d>(grid, in, so, {1, sevenRows});
    }
  });
  EXPECT_GE(ran, 1);
}

TEST(ConvTranspose3d, TinyWorkspaceGivesSameResultAsLargeOne) {
  const TensorShape in{2, 2, {3, 4, 5}};
  DoubleConvTranspose3d::Options o;
  o.outChannels = 3;
  o.bias = true;
  o.workspaceBytes = 1;
  EXPECT_EQ(DoubleConvTranspose3d(selfGrid(), "tiny", in, o).rowsPerChunk(), 1);
  o.workspaceBytes = std::size_t(64) << 20;
  EXPECT_EQ(DoubleConvTranspose3d(selfGrid(), "big", in, o).rowsPerChunk(), 2 * 3 * 4);
  const int ran = forEachGrid(chunkingGrids(), [&](const ProcessGrid& grid, const GridCase&) {
    expectSameForEveryWorkspace<DoubleConvTranspose3d>(grid, in, o, {1, 3000});
  });
  EXPECT_GE(ran, 1);
}

}  // namespace
}  // namespace hybrid3d::test
