// The refcheck runners of max_pool3d, avg_pool3d and batch_norm3d reproduce PyTorch's reference
// files (unit_tests/data) to 1e-10 relative on every grid of standardGridCases() the case's
// batch can be split over (N divisible by the number of data-parallel groups).

#include <string>

#include <gtest/gtest.h>

#include "GridCases.hpp"
#include "RefCase.hpp"

namespace hybrid3d::test {
namespace {

using app::refcheck::Comparison;
using app::refcheck::RefCase;
using app::refcheck::refOps;

void expectCaseMatches(const std::string& file, const std::string& op,
                       const std::vector<std::string>& tensors) {
  const RefCase c(std::string(HYBRID3D_TEST_DATA_DIR) + "/" + file);
  ASSERT_EQ(c.op(), op);
  ASSERT_EQ(refOps().count(op), 1u) << op << " has no runner";
  const Index batch = c.shape("input").at(0);
  int legal = 0;
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    if (batch % grid.numGroups() != 0) return;  // this case's batch does not split
    ++legal;
    const std::vector<Comparison> result = refOps().at(op)(c, grid);
    std::vector<std::string> seen;
    for (const Comparison& r : result) {
      seen.push_back(r.tensor);
      EXPECT_LE(r.maxRelError, 1e-10) << file << ": " << r.tensor;
    }
    EXPECT_EQ(seen, tensors) << file << ": compared tensors";
  });
  EXPECT_GE(legal, 1);
}

TEST(RefCheck, MaxPool3dMatchesPyTorchOnEveryGrid) {
  expectCaseMatches("max_pool3d_k2_s2_p0.h5", "max_pool3d", {"output", "grad_input"});
}

TEST(RefCheck, AvgPool3dMatchesPyTorchOnEveryGrid) {
  expectCaseMatches("avg_pool3d_k3_s2_p1.h5", "avg_pool3d", {"output", "grad_input"});
}

TEST(RefCheck, BatchNorm3dMatchesPyTorchOnEveryGrid) {
  expectCaseMatches("batch_norm3d.h5", "batch_norm3d",
                    {"output", "running_mean_after", "running_var_after", "grad_input",
                     "grad_weight", "grad_bias"});
}

}  // namespace
}  // namespace hybrid3d::test
