#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/io/Dataset.hpp>

#include "GridCases.hpp"
#include "SampleFiles.hpp"

namespace hybrid3d::test {
namespace {

using io::BatchPlan;
using io::Dataset;

TEST(Dataset, OpensADirectorySortedByNameAndAListFile) {
  const std::string dir = scratch("dataset_dir");
  const std::vector<std::string> names = {"s10.h5", "s02.h5", "s01.h5"};
  onRankZero([&] {
    std::filesystem::create_directories(dir);
    for (const std::string& n : names) std::ofstream(dir + "/" + n) << "x";
    std::ofstream(dir + "/notes.txt") << "not a sample";
    std::ofstream list(scratch("list.txt"));
    list << "# samples\n\n  dataset_dir/s10.h5 \n" << dir << "/s01.h5\n";
  });
  const Dataset d = Dataset::open(dir);
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_EQ(d.size(), Index(names.size()));
  for (std::size_t i = 0; i < sorted.size(); ++i)
    EXPECT_EQ(std::filesystem::path(d.file(Index(i))).filename().string(), sorted[i]);

  const Dataset l = Dataset::open(scratch("list.txt"));
  ASSERT_EQ(l.size(), 2);
  EXPECT_TRUE(std::filesystem::equivalent(l.file(0), dir + "/s10.h5"));
  EXPECT_TRUE(std::filesystem::equivalent(l.file(1), dir + "/s01.h5"));
}

TEST(Dataset, AMissingOrEmptySourceFailsNamingIt) {
  const std::string empty = scratch("empty_dir");
  onRankZero([&] { std::filesystem::create_directories(empty); });
  for (const std::string& p : {scratch("no_such_dir"), empty}) {
    try {
      Dataset::open(p);
      ADD_FAILURE() << "accepted " << p;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  }
}

TEST(BatchPlan, EpochOrderIsAPermutationThatChangesPerEpochAndRepeatsPerSeed) {
  const BatchPlan plan(50, 5, 1, 42), same(50, 5, 1, 42), other(50, 5, 1, 43);
  std::vector<Index> identity(50);
  std::iota(identity.begin(), identity.end(), 0);
  for (int e = 0; e < 3; ++e) {
    std::vector<Index> o = plan.epochOrder(e);
    EXPECT_EQ(o, same.epochOrder(e));
    EXPECT_NE(o, other.epochOrder(e));
    EXPECT_NE(o, plan.epochOrder(e + 1));
    EXPECT_NE(o, identity);
    std::sort(o.begin(), o.end());
    EXPECT_EQ(o, identity);
  }
  EXPECT_EQ(BatchPlan(50, 5, 1, 42, false).epochOrder(3), identity);
}

TEST(BatchPlan, GlobalMiniBatchDoesNotDependOnTheGroupCount) {
  const BatchPlan one(23, 4, 1, 7);
  EXPECT_EQ(one.batchesPerEpoch(), 23 / 4);  // the partial batch is dropped
  for (int groups : {2, 4}) {
    const BatchPlan plan(23, 4, groups, 7);
    EXPECT_EQ(plan.epochOrder(1), one.epochOrder(1));
    for (int e = 0; e < 2; ++e)
      for (Index b = 0; b < plan.batchesPerEpoch(); ++b) {
        std::vector<Index> joined;
        for (int g = 0; g < groups; ++g) {
          const std::vector<Index> part = plan.samples(e, b, g);
          EXPECT_EQ(part.size(), std::size_t(4 / groups));
          joined.insert(joined.end(), part.begin(), part.end());
        }
        EXPECT_EQ(joined, one.samples(e, b, 0));
      }
  }
}

TEST(BatchPlan, EveryGridReadsTheSameGlobalMiniBatches) {
  // On each grid, the ranks of all groups together read exactly what one group reads on one
  // rank, slot for slot; every spatial rank of a group reads the same samples.
  const BatchPlan reference(17, 4, 1, 99);
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const BatchPlan plan(17, 4, grid.numGroups(), 99);
    for (int e = 0; e < 2; ++e)
      for (Index b = 0; b < plan.batchesPerEpoch(); ++b) {
        const std::vector<Index> mine = plan.samples(e, b, grid.group());
        std::vector<Index> all(std::size_t(grid.worldSize()) * mine.size());
        MPI_Allgather(mine.data(), int(mine.size()), MPI_INT64_T, all.data(), int(mine.size()),
                      MPI_INT64_T, grid.worldComm());
        const std::vector<Index> want = reference.samples(e, b, 0);
        const std::size_t L = mine.size();
        for (int r = 0; r < grid.worldSize(); ++r) {
          const int g = r / grid.spatialSize();
          for (std::size_t j = 0; j < L; ++j)
            EXPECT_EQ(all[r * L + j], want[g * L + j]) << "rank " << r << " epoch " << e;
        }
      }
  });
}

TEST(BatchPlan, RefusesABatchNotAMultipleOfTheGroupsOrLargerThanTheDataset) {
  EXPECT_THROW(BatchPlan(10, 3, 2, 0), Error);
  EXPECT_THROW(BatchPlan(3, 4, 1, 0), Error);
  EXPECT_THROW(BatchPlan(10, 0, 1, 0), Error);
  EXPECT_NO_THROW(BatchPlan(10, 4, 2, 0));
}

}  // namespace
}  // namespace hybrid3d::test
