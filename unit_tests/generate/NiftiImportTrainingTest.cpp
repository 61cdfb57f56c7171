// A dataset made by `hybrid3d import nifti` trains the U-Net as it is (Data/train = the output
// directory), and a few steps give the 1-rank losses on the world's ranks (2 ranks per sample
// where the world splits evenly).
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mpi.h>

#include <hybrid3d/generate/NiftiImport.hpp>
#include <hybrid3d/train/Trainer.hpp>

#include "GenerateTestUtils.hpp"
#include "NiftiTestFile.hpp"
#include "WorldRank.hpp"

namespace {

using namespace hybrid3d;
namespace fs = std::filesystem;

constexpr int S = 16, kSamples = 4, kSteps = 3;

// Images whose labels follow their level (a task with something to learn), 20x14x12 voxels
// (x,y,z): cropped along x, padded along y and z.
void writeSources(const std::string& dir) {
  if (test::worldRank() != 0) return;
  fs::create_directories(dir + "/images");
  fs::create_directories(dir + "/labels");
  test::NiftiSpec spec;
  spec.xyzt = {20, 14, 12, 1};
  spec.datatype = NIFTI_TYPE_INT16;
  const std::size_t voxels = 20 * 14 * 12;
  for (int s = 0; s < kSamples; ++s) {
    std::vector<double> image(voxels), labels(voxels);
    for (std::size_t v = 0; v < voxels; ++v) {
      image[v] = double((v * 31 + std::size_t(s) * 7) % 200);
      labels[v] = image[v] < 60 ? 0 : image[v] < 130 ? 1 : 2;
    }
    const std::string name = "vol_00" + std::to_string(s) + ".nii.gz";
    spec.datatype = NIFTI_TYPE_INT16;
    test::writeNiftiFile(dir + "/images/" + name, spec, image);
    test::NiftiSpec l = spec;
    l.datatype = NIFTI_TYPE_UINT8;
    test::writeNiftiFile(dir + "/labels/" + name, l, labels);
  }
}

TrainConfig unetConfig(const std::string& data, const std::string& out) {
  TrainConfig c;
  c.model.architecture = "unet3d";
  c.model.inputWidth = S;
  c.model.seed = 3;
  c.model.convWorkspaceBytes = std::size_t(4) << 20;  // fewer pages to fault in at 16^3
  c.data.train = data;                                // the imported directory, listed
  c.data.prefetch = false;
  c.globalBatch = kSamples;
  c.epochs = 100;
  c.optimizer = "adam";
  c.schedule.baseRate = 1e-4;  // small steps: the runs sum in different orders
  c.outputDir = out;
  c.printEvery = 1000000;
  c.checkpointMinutes = 0;
  return c;
}

std::vector<double> losses(Trainer<float>& t) {
  std::vector<double> l;
  for (int s = 0; s < kSteps; ++s) l.push_back(t.step());
  return l;
}

TEST(NiftiImportTraining, TheUNetGivesTheOneRankLossesOnTheWorldsRanks) {
  test::ScratchDir dir;
  writeSources(dir.path());
  generate::NiftiImportOptions o;
  o.imagesDir = dir / "images";
  o.labelsDir = dir / "labels";
  o.outDir = dir / "imported";
  o.size = S;
  generate::importNifti(MPI_COMM_WORLD, o);

  std::vector<double> want(kSteps);
  if (test::worldRank() == 0) {
    ProcessGrid self(MPI_COMM_SELF, {1, 1, 1});
    Trainer<float> t(self, unetConfig(o.outDir, dir / "one"));
    want = losses(t);
  }
  MPI_Bcast(want.data(), kSteps, MPI_DOUBLE, 0, MPI_COMM_WORLD);

  // Two ranks per sample where the world splits evenly; the groups must divide the batch.
  const int world = test::worldSize(), perSample = world % 2 == 0 ? 2 : 1;
  if (kSamples % (world / perSample) != 0)
    GTEST_SKIP() << "no layout of " << world << " ranks for a mini-batch of " << kSamples;
  ProcessGrid grid(MPI_COMM_WORLD, {perSample, 1, 1});
  Trainer<float> t(grid, unetConfig(o.outDir, dir / "all"));
  const std::vector<double> got = losses(t);
  for (int s = 0; s < kSteps; ++s)
    EXPECT_NEAR(got[std::size_t(s)], want[std::size_t(s)], 1e-4 * std::abs(want[std::size_t(s)]))
        << "step " << s + 1 << " on " << world << " ranks, " << perSample << " per sample";
  if (test::worldRank() == 0)
    std::printf("[ losses ] 1 rank %.6f %.6f %.6f; %d ranks %.6f %.6f %.6f\n", want[0], want[1],
                want[2], world, got[0], got[1], got[2]);
}

}  // namespace
