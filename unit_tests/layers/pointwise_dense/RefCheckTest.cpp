// The PyTorch reference files of this part's ops, reproduced on every grid of
// standardGridCases() (none of these ops needs a halo, so every grid is legal, uneven and
// 1-voxel-thin ones included) through the same runners `hybrid3d refcheck` uses.
#include <string>

#include <gtest/gtest.h>

#include "RefCase.hpp"
#include "GridCases.hpp"

namespace hybrid3d::test {
namespace {

void checkCase(const std::string& file, std::size_t tensors) {
  const std::string path = std::string(HYBRID3D_TEST_DATA_DIR) + "/" + file;
  const int ran = forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const app::refcheck::RefCase c(path);
    const auto results = app::refcheck::refOps().at(c.op())(c, grid);
    EXPECT_EQ(results.size(), tensors) << file;
    for (const auto& r : results) EXPECT_LE(r.maxRelError, 1e-10) << file << " " << r.tensor;
  });
  EXPECT_GE(ran, 1);
}

TEST(RefCheck, LeakyReluMatchesPyTorchOnEveryGrid) { checkCase("leaky_relu_0.01.h5", 2); }
TEST(RefCheck, ReluMatchesPyTorchOnEveryGrid) { checkCase("relu.h5", 2); }
TEST(RefCheck, LinearMatchesPyTorchOnEveryGrid) { checkCase("linear.h5", 4); }
TEST(RefCheck, FlattenLinearMatchesPyTorchOnEveryGrid) { checkCase("flatten_linear.h5", 4); }
TEST(RefCheck, MseLossMatchesPyTorchOnEveryGrid) { checkCase("mse_loss.h5", 2); }
TEST(RefCheck, SoftmaxCrossEntropyMatchesPyTorchOnEveryGrid) {
  checkCase("softmax_cross_entropy.h5", 2);
}

}  // namespace
}  // namespace hybrid3d::test
