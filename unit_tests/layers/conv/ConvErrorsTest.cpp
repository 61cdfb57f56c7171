// Bad configurations fail with one line that names the layer, the extents and the grid.
#include <string>

#include <gtest/gtest.h>

#include <hybrid3d/layers/Conv3d.hpp>
#include <hybrid3d/layers/ConvTranspose3d.hpp>

#include "ErrorOf.hpp"
#include "GridCases.hpp"
#include "Invariance.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

#define EXPECT_HAS(text, piece) EXPECT_NE((text).find(piece), std::string::npos) << (text)

Conv3d<double, TestDevice>::Options conv(int out, int k, int s, int p) {
  Conv3d<double, TestDevice>::Options o;
  o.outChannels = out;
  o.kernel = k;
  o.stride = s;
  o.padding = p;
  return o;
}

TEST(Conv3d, EvenKernelIsRefused) {
  const std::string e = errorOf([] {
    Conv3d<double, TestDevice>(selfGrid(), "conv_even", {1, 2, {4, 4, 4}}, conv(2, 4, 1, 1));
  });
  EXPECT_HAS(e, "conv_even: kernel 4 must be odd");
  EXPECT_HAS(e, "input 1x2x4x4x4");
  EXPECT_HAS(e, "grid 1x1x1");
}

TEST(Conv3d, KernelLargerThanPaddedExtentIsRefused) {
  const std::string e = errorOf([] {
    Conv3d<double, TestDevice>(selfGrid(), "conv_big", {1, 2, {8, 3, 8}}, conv(2, 5, 1, 0));
  });
  EXPECT_HAS(e, "conv_big: kernel 5 does not fit input extent 3 along H with padding 0");
  EXPECT_HAS(e, "grid 1x1x1");
}

TEST(Conv3d, MismatchedChannelsAreRefused) {
  const std::string e = errorOf([] {
    Conv3d<double, TestDevice> layer(selfGrid(), "conv_ch", {1, 2, {4, 4, 4}}, conv(2, 3, 1, 1));
    auto x = createDistTensor<double, TestDevice>("x", 1, 3, layer.inputDecomposition(), {0, 0, 0},
                                                  layer.inputGhosts());
    auto y =
        createDistTensor<double, TestDevice>("y", 1, 2, layer.outputDecomposition(), {0, 0, 0});
    layer.forward(TestExecSpace(), x, y);
  });
  EXPECT_HAS(e, "conv_ch: input tensor 'x' is 1x3x4x4x4 on grid 1x1x1, expected 1x2x4x4x4");
}

TEST(Conv3d, GridTooFineForTheHaloIsRefused) {
  // Kernel 5 needs 2 ghost voxels; 3 voxels over 3 ranks leave each neighbour only 1.
  forEachGrid({{{3, 1, 1}, 1}}, [](const ProcessGrid& grid, const GridCase&) {
    const std::string e = errorOf([&] {
      Conv3d<double, TestDevice>(grid, "conv_fine", {1, 1, {3, 6, 6}}, conv(1, 5, 1, 2));
    });
    EXPECT_HAS(e, "conv_fine: ghost width 2");
    EXPECT_HAS(e, "extents 3x6x6, grid 3x1x1");
  });
}

TEST(ConvTranspose3d, KernelOtherThanStrideOrPaddingIsRefused) {
  ConvTranspose3d<double, TestDevice>::Options o;
  o.outChannels = 2;
  o.kernel = 3;
  o.stride = 2;
  std::string e = errorOf([&] {
    ConvTranspose3d<double, TestDevice>(selfGrid(), "up_ks", {1, 2, {4, 4, 4}}, o);
  });
  EXPECT_HAS(e, "up_ks: only kernel == stride");
  EXPECT_HAS(e, "grid 1x1x1");
  o.stride = 3;
  o.padding = 1;
  e = errorOf([&] {
    ConvTranspose3d<double, TestDevice>(selfGrid(), "up_pad", {1, 2, {4, 4, 4}}, o);
  });
  EXPECT_HAS(e, "up_pad: only kernel == stride >= 1 with padding 0");
}

TEST(ConvTranspose3d, GridTooFineForTheInputIsRefused) {
  // 2 input voxels over 4 ranks (1,1,0,0), 4 outputs (1 each): rank 3's output reads input 1 on
  // rank 1, two ranks away (rank 2 owns nothing). Every rank refuses with one line.
  forEachGrid({{{4, 1, 1}, 1}}, [](const ProcessGrid& grid, const GridCase&) {
    ConvTranspose3d<double, TestDevice>::Options o;
    o.outChannels = 2;
    const std::string e = errorOf([&] {
      ConvTranspose3d<double, TestDevice>(grid, "up_fine", {1, 2, {2, 4, 4}}, o);
    });
    EXPECT_HAS(e,
               "up_fine: ghost width 1 on the low side of D of rank 3 reaches past the "
               "neighbouring rank");
    EXPECT_HAS(e, "leaves rank 2 of that dimension only 0 voxel(s)");
    EXPECT_HAS(e, "grid 4x1x1");
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  });
}

}  // namespace
}  // namespace hybrid3d::test
