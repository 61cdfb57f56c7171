#pragma once
// Sample files for the tests that run whole training steps, S^3 voxels each, in a scratch
// directory every rank sees: noise, for tests of what a step does (CosmoFlow's /full and
// /unitPar, or the U-Net's /volume and /segmentation), and levels, for tests of what it learns;
// and the small CosmoFlow run those tests configure.
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/generate/SampleWriter.hpp>
#include <hybrid3d/train/TrainConfig.hpp>

#include "WorldRank.hpp"

namespace hybrid3d::test {

// An empty directory `base`_np<world>/`name`, made by rank 0, seen by every rank on return.
inline std::string scratchDirectory(const std::string& base, const std::string& name) {
  const std::string dir = base + "_np" + std::to_string(worldSize()) + "/" + name;
  if (worldRank() == 0) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return dir;
}

inline std::vector<std::string> writeNoiseSamples(const std::string& dir, bool segmentation,
                                                  int count, int S, unsigned seed = 5) {
  std::vector<std::string> files;
  for (int s = 0; s < count; ++s) files.push_back(dir + "/sample_" + std::to_string(s) + ".h5");
  if (worldRank() == 0) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1, 1);
    const int channels = segmentation ? 1 : 4;
    for (const std::string& f : files) {
      std::vector<float> volume(std::size_t(channels) * S * S * S);
      for (float& v : volume) v = u(rng);
      generate::SampleWriter w(MPI_COMM_SELF, f);
      if (segmentation) {
        std::vector<int> labels(volume.size());
        for (std::size_t i = 0; i < labels.size(); ++i)
          labels[i] = volume[i] < -0.3f ? 0 : volume[i] < 0.3f ? 1 : 2;
        w.writeWhole<float>("/volume", {1, S, S, S}, volume.data());
        w.writeWhole<int>("/segmentation", {S, S, S}, labels.data());
      } else {
        const float targets[4] = {u(rng), u(rng), u(rng), u(rng)};
        w.writeWhole<float>("/full", {4, S, S, S}, volume.data());
        w.writeWhole<float>("/unitPar", {4}, targets);
      }
      w.commit();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return files;
}

// CosmoFlow samples whose four targets are the four channels' mean levels, drawn in [-1, 1],
// plus voxel noise in [-0.5, 0.5]: a task a network learns from 16^3 volumes in a few steps.
// `poison` puts a NaN in every file (what a corrupt sample looks like to the trainer).
inline std::vector<std::string> writeLevelSamples(const std::string& dir, int count, int S,
                                                  unsigned seed, bool poison = false) {
  std::vector<std::string> files;
  for (int s = 0; s < count; ++s) files.push_back(dir + "/sample_" + std::to_string(s) + ".h5");
  if (worldRank() == 0) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> level(-1, 1), noise(-0.5, 0.5);
    for (int s = 0; s < count; ++s) {
      float target[4];
      std::vector<float> full(std::size_t(4) * S * S * S);
      for (int c = 0; c < 4; ++c) {
        target[c] = static_cast<float>(level(rng));
        for (int i = 0; i < S * S * S; ++i)
          full[std::size_t(c) * S * S * S + i] = static_cast<float>(target[c] + noise(rng));
      }
      if (poison) full[123] = std::nanf("");
      generate::SampleWriter w(MPI_COMM_SELF, files[s]);
      w.writeWhole<float>("/full", {4, S, S, S}, full.data());
      w.writeWhole<float>("/unitPar", {4}, target);
      w.commit();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return files;
}

// CosmoFlow at S^3 on `files`, mini-batch 4, Adam at 1e-4, no dropout, writing into `dir`,
// printing nothing; epochs enough that a test's step count ends the run.
inline TrainConfig smallCosmoFlowRun(const std::string& dir, const std::vector<std::string>& files,
                                     int S) {
  TrainConfig c;
  c.model.architecture = "cosmoflow";
  c.model.inputWidth = S;
  c.model.seed = 4;
  c.model.dropoutKeep = 1;
  c.data.trainFiles = files;
  c.data.train = "unused";
  c.globalBatch = 4;
  c.epochs = 1000;
  c.optimizer = "adam";
  c.schedule.baseRate = 1e-4;
  c.outputDir = dir;
  c.printEvery = 1000000;
  return c;
}

}  // namespace hybrid3d::test
