// Cosmology sample files: same bytes of data on one rank and on all ranks, different for
// another seed, the fixed file layout, and channels that differ physically.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>
#include <mpi.h>

#include <hybrid3d/generate/CosmologyGenerator.hpp>

#include "GenerateTestUtils.hpp"
#include "WorldRank.hpp"

namespace {

using namespace hybrid3d;
using namespace hybrid3d::generate;
using test::worldRank;

TEST(CosmologyGenerator, SameFileOnOneRankAndOnAllRanksAndAnotherForAnotherSeed) {
  // 9 is odd and leaves FFTW's blocks of ceil(9/P) planes uneven, with ranks that own no plane
  // at 4 and 8 ranks.
  for (const Index S : {Index(16), Index(9)}) {
    SCOPED_TRACE("size " + std::to_string(S));
    test::ScratchDir dir;
    const CosmologySpec spec{S, 8.0};
    const CosmologyParameters p = drawCosmologyParameters(21, 4);
    writeCosmologySample(MPI_COMM_WORLD, spec, p, 21, 4, dir / "all.h5");
    writeCosmologySample(MPI_COMM_WORLD, spec, p, 22, 4, dir / "otherSeed.h5");
    {
      test::FirstRanks one(1);
      if (one.inside()) writeCosmologySample(one.comm(), spec, p, 21, 4, dir / "one.h5");
    }
    if (worldRank() == 0) {
      const auto all = test::readWhole<std::int16_t>(dir / "all.h5", "/full");
      const auto one = test::readWhole<std::int16_t>(dir / "one.h5", "/full");
      const auto other = test::readWhole<std::int16_t>(dir / "otherSeed.h5", "/full");
      EXPECT_EQ(data::File(dir / "all.h5").shape("/full"), (std::vector<Index>{4, S, S, S}));
      EXPECT_EQ(all, one);
      EXPECT_NE(all, other);
      EXPECT_EQ(test::readWhole<float>(dir / "all.h5", "/unitPar"),
                test::readWhole<float>(dir / "one.h5", "/unitPar"));
    }
  }
}

TEST(CosmologyGenerator, LaterChannelsAreMoreClustered) {
  // Channel c scales the linear field by a_c^growth before the log-normal transform, so the
  // count variance must grow from the z = 3 channel to the z = 0 one.
  test::ScratchDir dir;
  CosmologyParameters p;  // the middle of every range
  writeCosmologySample(MPI_COMM_WORLD, {32, 8.0}, p, 1, 0, dir / "s.h5");
  if (worldRank() == 0) {
    const auto full = test::readWhole<std::int16_t>(dir / "s.h5", "/full");
    const std::size_t n = full.size() / 4;
    double previous = 0;
    for (int c = 0; c < 4; ++c) {
      double sum = 0, sum2 = 0;
      for (std::size_t i = c * n; i < (c + 1) * n; ++i) {
        EXPECT_GE(full[i], 0);
        sum += full[i];
        sum2 += double(full[i]) * full[i];
      }
      const double var = sum2 / n - (sum / n) * (sum / n);
      EXPECT_GT(var, previous) << "channel " << c;
      previous = var;
    }
  }
}

}  // namespace
