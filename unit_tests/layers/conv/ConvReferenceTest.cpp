// The refcheck runners of "conv3d" and "conv_transpose3d" reproduce the PyTorch reference files
// (unit_tests/reference) to 1e-10 relative on every grid of standardGridCases().
#include <string>

#include <gtest/gtest.h>

#include "RefCase.hpp"
#include "GridCases.hpp"

namespace hybrid3d::test {
namespace {

using app::refcheck::Comparison;
using app::refcheck::RefCase;
using app::refcheck::refOps;

void expectCaseReproduced(const std::string& file, const std::string& op, std::size_t tensors) {
  const RefCase c(std::string(HYBRID3D_TEST_DATA_DIR) + "/" + file);
  ASSERT_EQ(c.op(), op);
  ASSERT_EQ(refOps().count(op), 1u);
  const int ran = forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const std::vector<Comparison> results = refOps().at(op)(c, grid);
    EXPECT_EQ(results.size(), tensors) << file;
    for (const Comparison& r : results) EXPECT_LE(r.maxRelError, 1e-10) << file << " " << r.tensor;
  });
  EXPECT_GE(ran, 1);
}

TEST(Conv3dReference, PointwiseKernelWithBiasMatchesPyTorchOnEveryGrid) {
  expectCaseReproduced("conv3d_k1_s1_p0.h5", "conv3d", 4);
}
TEST(Conv3dReference, Kernel3WithBiasMatchesPyTorchOnEveryGrid) {
  expectCaseReproduced("conv3d_k3_s1_p1.h5", "conv3d", 4);
}
TEST(Conv3dReference, Kernel3Stride2MatchesPyTorchOnEveryGrid) {
  expectCaseReproduced("conv3d_k3_s2_p1.h5", "conv3d", 3);
}
TEST(ConvTranspose3dReference, Kernel2Stride2MatchesPyTorchOnEveryGrid) {
  expectCaseReproduced("conv_transpose3d_k2_s2.h5", "conv_transpose3d", 3);
}

}  // namespace
}  // namespace hybrid3d::test
