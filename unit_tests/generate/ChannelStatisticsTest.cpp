// Channel statistics (`hybrid3d stats`, a deck's `auto`): equal to a plain two-pass computation
// in double over every file (with and without log1p, int16 and float32, channels first and
// last), bit-identical on one rank and on all, and the cache beside the data is reused when
// nothing changed, recomputed when a file changed or the cache was damaged, and skipped with a
// note where the directory cannot be written.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mpi.h>

#include <hybrid3d/data/ChannelStatisticsCache.hpp>
#include <hybrid3d/data/Dataset.hpp>
#include <hybrid3d/generate/Downsample.hpp>
#include <hybrid3d/generate/GenerateDataset.hpp>

#include "ErrorOf.hpp"
#include "GenerateTestUtils.hpp"
#include "WorldRank.hpp"

namespace {

using namespace hybrid3d;
using namespace hybrid3d::generate;
using test::errorOf;

void writeDataset(const std::string& dir, int train = 5) {
  GenerateOptions o;
  o.generator = "cosmology";
  o.outDir = dir;
  o.size = 16;
  o.train = train;
  o.validation = 1;
  o.seed = 9;
  o.meanCount = 30;
  generateDataset(MPI_COMM_WORLD, o);
}

// The plain computation: every value of every file, mean then squared deviations, in double.
data::ChannelStatistics twoPass(const data::Dataset& set, int C, bool log1p) {
  std::vector<std::vector<double>> values(static_cast<std::size_t>(C));
  for (const std::string& f : set.files()) {
    const data::File file(f);
    const std::vector<double> x = file.read<double>("/full");
    const bool last = file.hasAttribute("layout");
    const std::size_t voxels = x.size() / std::size_t(C);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::size_t c = last ? i % std::size_t(C) : i / voxels;
      values[c].push_back(log1p ? std::log1p(x[i]) : x[i]);
    }
  }
  data::ChannelStatistics s;
  for (const auto& v : values) {
    double sum = 0, squares = 0;
    for (double x : v) sum += x;
    const double mean = sum / double(v.size());
    for (double x : v) squares += (x - mean) * (x - mean);
    s.mean.push_back(mean);
    s.std.push_back(std::sqrt(squares / double(v.size())));
  }
  return s;
}

data::Dataset listed(const std::string& dir) {
  return data::Dataset::openShared(MPI_COMM_WORLD, dir);
}

TEST(ChannelStatistics, EqualATwoPassComputationAndTheSameOnEveryRankCount) {
  test::ScratchDir dir;
  writeDataset(dir / "s16");
  downsampleDataset(MPI_COMM_WORLD, {dir / "s16", dir / "f8", 2});  // float32
  for (const std::string& name : {std::string("s16"), std::string("f8")}) {
    const data::Dataset set = listed(dir / (name + "/train"));
    const data::SampleSpec spec = data::inputSpecOf(set.file(0));
    ASSERT_EQ(spec.channels, 4);
    for (bool log1p : {false, true}) {
      const data::ChannelStatistics all = data::channelStatistics(MPI_COMM_WORLD, set, spec, log1p);
      EXPECT_EQ(all.samples, 5);
      std::vector<double> mean(4), sd(4);
      {
        test::FirstRanks one(1);
        if (one.inside()) {
          const data::ChannelStatistics alone =
              data::channelStatistics(one.comm(), set, spec, log1p);
          mean = alone.mean;
          sd = alone.std;
        }
      }
      MPI_Bcast(mean.data(), 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      MPI_Bcast(sd.data(), 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      EXPECT_EQ(all.mean, mean) << name << " log1p " << log1p << ": bit-identical on 1 rank";
      EXPECT_EQ(all.std, sd) << name << " log1p " << log1p;
      const data::ChannelStatistics plain = twoPass(set, 4, log1p);
      for (int c = 0; c < 4; ++c) {
        EXPECT_NEAR(all.mean[c], plain.mean[c], 1e-12 * std::abs(plain.mean[c])) << name << c;
        EXPECT_NEAR(all.std[c], plain.std[c], 1e-12 * plain.std[c]) << name << c;
        EXPECT_EQ(all.scales()[c], 1.0 / all.std[c]);
      }
    }
  }
}

TEST(ChannelStatistics, CacheIsReusedAndRecomputedWhenAFileChanges) {
  test::ScratchDir dir;
  writeDataset(dir / "d");
  const std::string train = dir / "d/train";
  const std::string cache = data::channelStatisticsCachePath(train, true);
  EXPECT_EQ(cache, train + "/.hybrid3d_channel_statistics_log1p");
  auto run = [&] {
    const data::Dataset set = listed(train);
    return data::cachedChannelStatistics(MPI_COMM_WORLD, set, data::inputSpecOf(set.file(0)), true,
                                         cache);
  };
  const data::CachedStatistics first = run();
  EXPECT_FALSE(first.fromCache);
  const data::CachedStatistics second = run();
  EXPECT_TRUE(second.fromCache) << "not recomputed when nothing changed";
  EXPECT_EQ(second.statistics.mean, first.statistics.mean);
  EXPECT_EQ(second.statistics.std, first.statistics.std);
  // The cache is not a sample: the listing still holds the 5 files.
  EXPECT_EQ(listed(train).size(), 5);

  // A file rewritten (another sample under the same name): recomputed, other values.
  if (test::worldRank() == 0) {
    std::filesystem::copy_file(train + "/cosmo_000001.h5", train + "/cosmo_000000.h5",
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::last_write_time(
        train + "/cosmo_000000.h5",
        std::filesystem::last_write_time(train + "/cosmo_000000.h5") + std::chrono::seconds(2));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const data::CachedStatistics changed = run();
  EXPECT_FALSE(changed.fromCache);
  EXPECT_NE(changed.statistics.mean, first.statistics.mean);
  if (test::worldRank() == 0) {
    EXPECT_NE(changed.note.find("the dataset changed"), std::string::npos) << changed.note;
    std::ofstream(cache) << "key 12\nmean x\n";  // damaged
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const data::CachedStatistics repaired = run();
  EXPECT_FALSE(repaired.fromCache);
  EXPECT_EQ(repaired.statistics.mean, changed.statistics.mean);
  if (test::worldRank() == 0) {
    EXPECT_NE(repaired.note.find("was damaged"), std::string::npos) << repaired.note;
  }
  EXPECT_TRUE(run().fromCache) << "the damaged cache was replaced";
}

TEST(ChannelStatistics, ReadOnlyDirectoryComputesWithoutCaching) {
  test::ScratchDir dir;
  writeDataset(dir / "d");
  const data::Dataset set = listed(dir / "d/train");
  const data::CachedStatistics r =
      data::cachedChannelStatistics(MPI_COMM_WORLD, set, data::inputSpecOf(set.file(0)), false,
                                    dir / "d/no_such_folder/.hybrid3d_channel_statistics");
  EXPECT_FALSE(r.fromCache);
  if (test::worldRank() == 0) {
    EXPECT_NE(r.note.find("not cached: cannot write"), std::string::npos);
  }
}

TEST(ChannelStatistics, BadFilesStopEveryRankNamingTheFile) {
  test::ScratchDir dir;
  writeDataset(dir / "d");
  const data::Dataset set = listed(dir / "d/train");
  const data::SampleSpec spec = data::inputSpecOf(set.file(0));
  if (test::worldRank() == 0) std::ofstream(set.file(3)) << "not a sample";
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string error =
      errorOf([&] { data::channelStatistics(MPI_COMM_WORLD, set, spec, false); });
  EXPECT_NE(error.find("cosmo_000003.h5"), std::string::npos) << error;
  EXPECT_NE(errorOf([&] { data::inputSpecOf(set.file(3)); }).find("cosmo_000003.h5"),
            std::string::npos);
}

}  // namespace
