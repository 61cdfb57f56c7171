#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/train/OutputDirectory.hpp>

#include "WorldRank.hpp"

namespace hybrid3d::test {
namespace {

namespace fs = std::filesystem;

std::string scratch(const std::string& name) {
  const std::string dir = "output_directory_test_np" + std::to_string(worldSize()) + "/" + name;
  if (worldRank() == 0) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return dir;
}

void writeText(const std::string& path, const std::string& text) {
  if (worldRank() == 0) std::ofstream(path) << text;
  MPI_Barrier(MPI_COMM_WORLD);
}

std::string readText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The message every rank got, or "" when nothing was thrown.
std::string refusal(const OutputDirectoryOptions& o) {
  try {
    OutputDirectory d(MPI_COMM_WORLD, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(OutputDirectory, MetricsAfterTheCheckpointStepAreDropped) {
  const std::string text =
      "kind,step,epoch\ntrain,1,1\ntrain,2,1\nvalidation,2,1\ntrain,3,2\ntrain,4,2\ntrai";
  int dropped = -1;
  EXPECT_EQ(metricsUpToStep(text, 2, dropped),
            "kind,step,epoch\ntrain,1,1\ntrain,2,1\nvalidation,2,1\n");
  EXPECT_EQ(dropped, 3);  // steps 3 and 4, and the torn last row
  // A torn write of another run: NUL bytes, then rows.
  const char torn[] = "kind,step\ntrain,1,1\n\0\0train,2,1\n";
  EXPECT_EQ(metricsUpToStep(std::string(torn, sizeof torn - 1), 5, dropped),
            "kind,step\ntrain,1,1\n");
  EXPECT_EQ(dropped, 1);
}

TEST(OutputDirectory, NestingIsSeenThroughDotsAndTrailingSeparators) {
  EXPECT_TRUE(pathWithin("data/train/run", "data/train"));
  EXPECT_TRUE(pathWithin("data/./train/", "data/train"));
  EXPECT_TRUE(pathWithin("data/train", "data/train/"));
  EXPECT_FALSE(pathWithin("data/training", "data/train"));
  EXPECT_FALSE(pathWithin("data", "data/train"));
}

TEST(OutputDirectory, ASecondHolderIsRefusedNamingTheFirst) {
  const std::string dir = scratch("locked");
  OutputDirectoryOptions o;
  o.dir = dir;
  {
    OutputDirectory first(MPI_COMM_WORLD, o);
    const std::string m = refusal(o);
    EXPECT_NE(m.find(dir + ": another run is writing this output directory (host "),
              std::string::npos)
        << m;
  }
  // Released with the first: the directory can be taken again, and no lock file is left (rank 0
  // removes it as its OutputDirectory ends, which the other ranks' do not wait for).
  EXPECT_EQ(refusal(o), "");
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_FALSE(fs::exists(RunLock::fileOf(dir)));
}

TEST(OutputDirectory, EarlierRunIsRefusedOrKeptAndARestartTrimsTheMetrics) {
  const std::string dir = scratch("earlier");
  writeText(dir + "/metrics.csv", "kind,step\ntrain,1,1\ntrain,2,1\ntrain,3,1\n");
  writeText(dir + "/checkpoint.h5", "not really");
  OutputDirectoryOptions o;
  o.dir = dir;
  const std::string m = refusal(o);
  EXPECT_NE(m.find("resume it with --restart " + dir +
                   "/checkpoint.h5, or start over with "
                   "--overwrite"),
            std::string::npos)
      << m;
  o.restarting = true;
  o.restartStep = 2;
  EXPECT_EQ(refusal(o), "");
  EXPECT_EQ(readText(dir + "/metrics.csv"), "kind,step\ntrain,1,1\ntrain,2,1\n");
  o.restarting = false;
  o.overwrite = true;
  EXPECT_EQ(refusal(o), "");
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_FALSE(fs::exists(dir + "/checkpoint.h5"));
  EXPECT_FALSE(fs::exists(dir + "/metrics.csv"));
  int kept = 0;
  for (const auto& e : fs::directory_iterator(dir)) kept += e.path().filename() != ".hybrid3d.lock";
  EXPECT_EQ(kept, 2);
}

TEST(OutputDirectory, InsideADatasetOrHoldingOneIsRefused) {
  const std::string dir = scratch("nested");
  if (worldRank() == 0) fs::create_directories(dir + "/data");
  MPI_Barrier(MPI_COMM_WORLD);
  OutputDirectoryOptions o;
  o.dir = dir + "/data/run";
  o.datasets = {dir + "/data"};
  EXPECT_NE(refusal(o).find("lies inside the dataset directory"), std::string::npos);
  o.dir = dir;
  EXPECT_NE(refusal(o).find("lies inside 'Training/output directory'"), std::string::npos);
}

}  // namespace
}  // namespace hybrid3d::test
