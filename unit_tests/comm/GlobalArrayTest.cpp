#include <gtest/gtest.h>

#include <hybrid3d/comm/GlobalArray.hpp>

#include "GridCases.hpp"
#include "Invariance.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

TEST(GlobalArray, ScatterThenGatherReturnsTheArrayOnEveryGrid) {
  forEachGrid(standardGridCases(), [](const ProcessGrid& grid, const GridCase&) {
    const Index3 e{7, 5, 3};
    auto global = randomGlobal<double>("g", 2, 3, e, 99 + grid.group());
    const BlockDecomposition dec(e, grid.dims());
    auto t = createDistTensor<double, TestDevice>("t", 2, 3, dec, grid.coords(),
                                                  GhostWidths{{1, 0, 2}, {0, 1, 1}});
    scatterFromGlobal(global, t);
    auto back = gatherToGlobal(t, grid.spatialComm());
    EXPECT_EQ(maxRelativeError(back, global), 0.0);
  });
}

}  // namespace
}  // namespace hybrid3d::test
