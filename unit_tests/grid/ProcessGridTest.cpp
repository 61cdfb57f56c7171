#include <set>

#include <gtest/gtest.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>

#include "GridCases.hpp"

namespace hybrid3d::test {
namespace {

TEST(ProcessGrid, CommunicatorsSplitWorldIntoGroupsAndPositions) {
  const int ran = forEachGrid(standardGridCases(), [](const ProcessGrid& g, const GridCase& c) {
    const int P = c.spatial[0] * c.spatial[1] * c.spatial[2];
    EXPECT_EQ(g.spatialSize(), P);
    EXPECT_EQ(g.numGroups(), c.groups);
    EXPECT_EQ(g.group(), g.worldRank() / P);
    EXPECT_EQ(g.spatialRank(), g.worldRank() % P);
    int n;
    MPI_Comm_size(g.spatialComm(), &n);
    EXPECT_EQ(n, P);
    MPI_Comm_size(g.dataComm(), &n);
    EXPECT_EQ(n, c.groups);
    // Every member of my data communicator holds my spatial position.
    std::vector<int> positions(c.groups);
    const int mine = g.spatialRank();
    MPI_Allgather(&mine, 1, MPI_INT, positions.data(), 1, MPI_INT, g.dataComm());
    for (int p : positions) EXPECT_EQ(p, mine);
    // Coordinates are distinct within a group and the Cartesian ranks invert them.
    EXPECT_EQ(g.rankAt(g.coords()), g.spatialRank());
    std::vector<int> all(3 * P);
    MPI_Allgather(g.coords().data(), 3, MPI_INT, all.data(), 3, MPI_INT, g.spatialComm());
    std::set<std::vector<int>> distinct;
    for (int r = 0; r < P; ++r) distinct.insert({all[3 * r], all[3 * r + 1], all[3 * r + 2]});
    EXPECT_EQ(static_cast<int>(distinct.size()), P);
    // Outside the non-periodic grid there is no neighbour.
    EXPECT_EQ(g.rankAt({-1, 0, 0}), MPI_PROC_NULL);
    EXPECT_EQ(g.rankAt({c.spatial[0], 0, 0}), MPI_PROC_NULL);
  });
  EXPECT_GE(ran, 1);
}

TEST(ProcessGrid, WorldNotMultipleOfSpatialGridFailsOnEveryRank) {
  const Int3 tooMany{worldSize() + 1, 1, 1};
  bool threw = false;
  try {
    ProcessGrid g(MPI_COMM_WORLD, tooMany);
  } catch (const Error& e) {
    threw = true;
    EXPECT_NE(std::string(e.what()).find("is not a multiple of the spatial grid"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(allTrue(threw));
  if (worldSize() >= 4) {  // 4 or 8 ranks over a 3-rank grid: a remainder, not too few ranks
    EXPECT_THROW(ProcessGrid(MPI_COMM_WORLD, {3, 1, 1}), Error);
  }
  EXPECT_THROW(ProcessGrid(MPI_COMM_WORLD, {1, 0, 1}), Error);
}

TEST(ProcessGrid, ParsesGridSpecsAndRejectsMalformedOnes) {
  EXPECT_EQ(parseGridSpec("2x1x3"), (Int3{2, 1, 3}));
  EXPECT_EQ(parseGridSpec("16x8x8"), (Int3{16, 8, 8}));
  for (const char* bad :
       {"", "2x1", "2x1x1x1", "axbxc", "0x1x1", "2x-1x1", "2 x1x1", "99999999999x1x1"}) {
    try {
      parseGridSpec(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("\"") + bad + "\""), std::string::npos)
          << e.what();
    }
  }
}

TEST(ProcessGrid, AutoGridKeepsSubdomainsClosestToCubes) {
  EXPECT_EQ(autoSpatialGrid(1, {64, 64, 64}), (Int3{1, 1, 1}));
  EXPECT_EQ(autoSpatialGrid(2, {64, 64, 64}), (Int3{2, 1, 1}));  // ties: cut D first
  EXPECT_EQ(autoSpatialGrid(4, {64, 64, 64}), (Int3{2, 2, 1}));
  EXPECT_EQ(autoSpatialGrid(8, {64, 64, 64}), (Int3{2, 2, 2}));
  EXPECT_EQ(autoSpatialGrid(64, {512, 512, 512}), (Int3{4, 4, 4}));
  EXPECT_EQ(autoSpatialGrid(4, {16, 256, 256}), (Int3{1, 2, 2}));  // flat volume: keep D whole
  EXPECT_EQ(autoSpatialGrid(2, {1, 8, 8}), (Int3{1, 2, 1}));       // never split below 1 voxel
  EXPECT_EQ(autoSpatialGrid(7, {64, 64, 64}), (Int3{7, 1, 1}));    // a prime has one shape
}

}  // namespace
}  // namespace hybrid3d::test
