// Half's dynamic loss scaling (train/LossScale.hpp): the scale's rule, and the verdict on the
// gradients agreed by every rank whichever rank overflowed.

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>
#include <mpi.h>

#include <hybrid3d/train/LossScale.hpp>

#include "WorldRank.hpp"

namespace hybrid3d {
namespace {

TEST(LossScale, HalvesOnOverflowAndDoublesAfterCleanSteps) {
  LossScaleOptions o;
  o.enabled = true;
  o.initial = 1024;
  o.growthInterval = 3;
  LossScale s(o);
  EXPECT_EQ(s.scale(), 1024);
  EXPECT_FALSE(s.update(false));  // skipped
  EXPECT_EQ(s.scale(), 512);
  EXPECT_TRUE(s.update(true));
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 512);
  EXPECT_TRUE(s.update(true));  // the third clean step in a row
  EXPECT_EQ(s.scale(), 1024);
  EXPECT_TRUE(s.update(true));
  EXPECT_FALSE(s.update(false));  // an overflow restarts the count
  EXPECT_TRUE(s.update(true));
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 512);
  EXPECT_EQ(s.skippedSteps(), 2);
}

TEST(LossScale, DisabledNeverSkipsAndKeepsOne) {
  LossScale s(LossScaleOptions{});
  EXPECT_EQ(s.scale(), 1.0);
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 1.0);
  EXPECT_EQ(s.skippedSteps(), 0);
}

TEST(LossScale, EveryRankAgreesOnOneRanksOverflow) {
  const int rank = test::worldRank(), size = test::worldSize();
  using View = Kokkos::View<float*, Kokkos::HostSpace>;
  for (int culprit = -1; culprit < size; ++culprit) {
    std::vector<View> grads{View("a", 5), View("b", 3)};
    for (auto& g : grads) Kokkos::deep_copy(g, 8.0f);
    if (rank == culprit) grads[1](2) = std::numeric_limits<float>::infinity();
    const bool finite = scaleGradientsAndCheck<float, Kokkos::HostSpace>(
        Kokkos::DefaultHostExecutionSpace(), grads, 0.25f, MPI_COMM_WORLD);
    EXPECT_EQ(finite, culprit < 0) << "culprit rank " << culprit;
    EXPECT_EQ(grads[0](4), 2.0f);  // divided by the scale
  }
}

}  // namespace
}  // namespace hybrid3d
