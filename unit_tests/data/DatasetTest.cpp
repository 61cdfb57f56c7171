#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/Dataset.hpp>

#include "GridCases.hpp"
#include "SampleFiles.hpp"

namespace hybrid3d::test {
namespace {

using data::BatchPlan;
using data::Dataset;

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

// One sample file given as the dataset is a dataset of that sample (as a PyTorch dataset of one
// file would read it), whatever its format; a file of another name is a list file.
TEST(Dataset, OneSampleFileIsADatasetOfThatSample) {
  const std::vector<std::string> samples = {scratch("one.h5"), scratch("one.hdf5"),
                                            scratch("one.data.npy")};
  onRankZero([&] {
    for (const std::string& s : samples) std::ofstream(s) << "a sample";
  });
  for (const std::string& s : samples) {
    const Dataset d = Dataset::open(s);
    ASSERT_EQ(d.size(), 1) << s;
    EXPECT_EQ(d.file(0), s);
    EXPECT_EQ(d.bytes(0), std::uint64_t(std::string("a sample").size()));
  }
}

// What is neither a directory nor a regular file (a FIFO would block the listing forever), and a
// binary file where a list was expected (its bytes are no file names), fail naming the path.
TEST(Dataset, AFifoOrABinaryFileGivenAsAListFailsNamingIt) {
  const std::string fifo = scratch("samples.fifo"), binary = scratch("sample.bin");
  onRankZero([&] {
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    std::ofstream(binary, std::ios::binary) << std::string("\x89HDF\r\n\x1a\n\0\0\0", 11);
  });
  const std::vector<std::pair<std::string, std::string>> cases = {
      {fifo, fifo + ": is a FIFO (named pipe), not a dataset directory, list file or sample file"},
      {binary, binary + ":1: not a file name (binary bytes)"}};
  for (const auto& [path, want] : cases) {
    try {
      Dataset::open(path);
      ADD_FAILURE() << "accepted " << path;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}

TEST(Dataset, ListedOnceOnRankZeroAndEveryRankGetsItsList) {
  // A file system that shows each rank a different directory (here: a listing that depends on
  // the rank, as a stale cache would give) must not give ranks different datasets: only rank 0
  // lists, and every rank gets its names and sizes.
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto viewOf = [](int r) {
    std::vector<std::string> files;
    std::vector<std::uint64_t> bytes;
    for (int i = 0; i <= r + 2; ++i) {
      files.push_back("/data/rank" + std::to_string(r) + "_" + std::to_string(i) + ".h5");
      bytes.push_back(std::uint64_t(1000 * r + i));
    }
    return Dataset(files, "view of rank " + std::to_string(r), bytes);
  };
  int listings = 0;
  const Dataset d = Dataset::listOnce(MPI_COMM_WORLD, [&] {
    ++listings;
    return viewOf(rank);
  });
  EXPECT_EQ(listings, rank == 0 ? 1 : 0);
  const Dataset want = viewOf(0);
  EXPECT_EQ(d.files(), want.files());
  EXPECT_EQ(d.source(), want.source());
  ASSERT_EQ(d.size(), want.size());
  for (Index i = 0; i < d.size(); ++i) EXPECT_EQ(d.bytes(i), want.bytes(i));
  int total = listings;
  MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(total, 1) << "of " << size << " ranks";
}

TEST(Dataset, AListingErrorOnRankZeroStopsEveryRankWithItsMessage) {
  const std::string missing = scratch("no_such_dataset");
  std::string message;
  try {
    Dataset::openShared(MPI_COMM_WORLD, missing);
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find(missing), std::string::npos) << message;
  // A list file naming a file that is not there names that file.
  onRankZero([&] { std::ofstream(scratch("gone.txt")) << "gone.h5\n"; });
  message.clear();
  try {
    Dataset::openShared(MPI_COMM_WORLD, scratch("gone.txt"));
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find(scratch("gone.h5")), std::string::npos) << message;
}

TEST(Dataset, ASizeThatChangedSinceListingIsAnErrorNamingTheFile) {
  const std::string dir = scratch("sized_dir");
  onRankZero([&] {
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/a.h5") << "abc";
    std::ofstream(dir + "/b.h5") << "defgh";
  });
  const Dataset d = Dataset::openShared(MPI_COMM_WORLD, dir);
  ASSERT_EQ(d.size(), 2);
  EXPECT_EQ(d.bytes(0), 3u);
  EXPECT_EQ(d.bytes(1), 5u);
  EXPECT_NO_THROW(d.checkUnchanged(1, "world rank 0"));
  MPI_Barrier(MPI_COMM_WORLD);  // every rank has checked before the file grows
  onRankZero([&] { std::ofstream(dir + "/b.h5", std::ios::app) << "more"; });
  try {
    d.checkUnchanged(1, "world rank 7");
    ADD_FAILURE() << "a grown file passed";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(
        m.find(dir + "/b.h5: 9 bytes on world rank 7 but 5 bytes when the dataset was listed"),
        std::string::npos)
        << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST(BatchPlan, EvaluationVisitsEverySampleOnceInOrder) {
  // Whatever N mod B, B > N, and groups left without a sample in the last batch.
  for (int groups : {1, 2, 3})
    for (int B : {1, 2, 3, 4, 7, 12}) {
      const BatchPlan plan = BatchPlan::evaluation(7, B, groups);
      EXPECT_EQ(plan.batchesPerEpoch(), (7 + B - 1) / B);
      std::vector<Index> seen;
      for (Index b = 0; b < plan.batchesPerEpoch(); ++b)
        for (int g = 0; g < groups; ++g) {
          const std::vector<Index> part = plan.samples(0, b, g);
          EXPECT_LE(int(part.size()), plan.localBatch());
          EXPECT_EQ(int(part.size()), plan.count(b, g));
          seen.insert(seen.end(), part.begin(), part.end());
        }
      std::vector<Index> identity(7);
      std::iota(identity.begin(), identity.end(), 0);
      EXPECT_EQ(seen, identity) << "B " << B << " G " << groups;
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
