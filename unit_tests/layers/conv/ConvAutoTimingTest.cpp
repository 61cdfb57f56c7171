// Auto's choice by time (engines/ConvTimings.hpp, layers/impl/Conv3dChoice_impl.hpp): every
// rank of a grid takes the same code for each pass, the one whose slowest rank is fastest,
// whatever each rank timed; passes chosen apart (forward on one candidate, backward-weights on
// another) still compute the 1-rank result; and a shape measured once is read from the cache
// after, the report saying which.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include <hybrid3d/layers/Conv3d.hpp>

#include "ConvHarness.hpp"
#include "ConvTimers.hpp"
#include "GridCases.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

using FloatConv3d = Conv3d<float, TestDevice>;
using DoubleConv3d = Conv3d<double, TestDevice>;

const std::vector<GridCase> grids{{{1, 1, 1}, 1}, {{2, 1, 1}, 1}, {{1, 2, 2}, 1}, {{2, 1, 1}, 2}};

TEST(Conv3dAutoTiming, EveryRankTakesWhatTheSlowestRankTimedFastest) {
  // Rank r times kokkos at 1 + 2r seconds and every other candidate at 2: alone, a rank would
  // take kokkos on rank 0 and the other on the rest; together, all take the other candidate on
  // more than one rank (kokkos's slowest rank, 3 s or more, against 2), kokkos on one.
  const int ran = forEachGrid(grids, [&](const ProcessGrid& grid, const GridCase&) {
    int rank = 0, size = 1;
    MPI_Comm_rank(grid.worldComm(), &rank);
    MPI_Comm_size(grid.worldComm(), &size);
    FloatConv3d::Options o;
    o.outChannels = 3;
    o.timer = [rank](const ConvTimes& can) {
      ConvTimes t = noConvTimes();
      for (int p = 0; p < convPassCount; ++p)
        for (int c = 0; c < convCandidateCount; ++c)
          if (std::isfinite(can[p][c]))
            t[p][c] = c == int(ConvCandidate::Kokkos) ? 1 + 2 * rank : 2;
      return t;
    };
    const FloatConv3d layer(grid, "c", {2 * grid.numGroups(), 4, {6, 5, 4}}, o);
    for (int p = 0; p < convPassCount; ++p) {
      const ConvCandidate taken = layer.passEngine(ConvPass(p));
      const auto& times = layer.passTimes()[p];
      bool other = false;  // whether the pass has a candidate besides kokkos
      for (int c = 1; c < convCandidateCount; ++c) other = other || std::isfinite(times[c]);
      EXPECT_EQ(times[int(ConvCandidate::Kokkos)], 1 + 2 * (size - 1)) << p;
      EXPECT_EQ(taken == ConvCandidate::Kokkos, size == 1 || !other) << p;
      int mine = int(taken), least = 0, most = 0;
      MPI_Allreduce(&mine, &least, 1, MPI_INT, MPI_MIN, grid.worldComm());
      MPI_Allreduce(&mine, &most, 1, MPI_INT, MPI_MAX, grid.worldComm());
      EXPECT_EQ(least, most) << "pass " << p << ": the ranks disagree";
    }
  });
  EXPECT_GE(ran, 1);
}

TEST(Conv3dAutoTiming, PassesOnDifferentCodeComputeTheOneRankResult) {
  // Each pass on another candidate, where there are several: forward on the vendor engine,
  // backward-data on kokkos, backward-weights on the direct kernels (or as near as this build
  // and CPU allow), against the kokkos engine in double on one rank.
  const auto mixed = [](const ConvTimes& can) {
    const ConvCandidate wanted[convPassCount] = {ConvCandidate::OneDnn, ConvCandidate::Kokkos,
                                                 ConvCandidate::Direct};
    ConvTimes t = noConvTimes();
    for (int p = 0; p < convPassCount; ++p)
      for (int c = 0; c < convCandidateCount; ++c)
        if (std::isfinite(can[p][c])) t[p][c] = c == int(wanted[p]) ? 1.0 : 2.0 + c;
    return t;
  };
  const int ran = forEachGrid(grids, [&](const ProcessGrid& grid, const GridCase& g) {
    for (const bool bias : {false, true}) {
      FloatConv3d::Options o;
      o.outChannels = 5;
      o.bias = bias;
      o.timer = mixed;
      DoubleConv3d::Options reference = {};
      reference.outChannels = 5;
      reference.bias = bias;
      reference.engine = ConvEngine::Kokkos;
      expectSameAsOneRank<FloatConv3d, DoubleConv3d>(grid, {2 * g.groups, 3, {6, 5, 7}}, o,
                                                     reference, {}, 5e-6,
                                                     bias ? "mixed, bias" : "mixed");
    }
  });
  EXPECT_GE(ran, 1);
}

TEST(Conv3dAutoTiming, AShapeIsMeasuredOnceThenRead) {
  // Measured on this machine the first time (or read, when an earlier run of the suite left it
  // in the cache file), read from the cache after; the report names the times and their source.
  FloatConv3d::Options o;
  o.outChannels = 6;
  const TensorShape in{1, 3, {5, 6, 7}};
  const FloatConv3d first(selfGrid(), "first", in, o);
  const FloatConv3d second(selfGrid(), "second", in, o);
  const std::string how = second.engineDescription();
  EXPECT_NE(how.find("[cached]"), std::string::npos) << how;
  for (const char* pass : {"forward ", "; backward-data ", "; backward-weights "})
    EXPECT_NE(how.find(pass), std::string::npos) << how;
  EXPECT_NE(how.find(" ms"), std::string::npos) << how;
  const std::string before = first.engineDescription();
  EXPECT_TRUE(before.find("[measured]") != std::string::npos ||
              before.find("[cached]") != std::string::npos)
      << before;
  for (int p = 0; p < convPassCount; ++p) {
    const ConvCandidate taken = second.passEngine(ConvPass(p));
    EXPECT_EQ(taken, fastestCandidate(second.passTimes()[p])) << p;
    EXPECT_GT(second.passTimes()[p][int(taken)], 0.0) << p;
  }
}

}  // namespace
}  // namespace hybrid3d::test
