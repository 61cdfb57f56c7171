// The trainer in the 16-bit activation types: bfloat16 learns what float learns; checkpoints
// hold float master weights, so a bfloat16 run restarts as float and the reverse (the change
// reported, the weights loaded bit for bit); half's dynamic loss scaling skips the steps whose
// gradients overflow, lowers the scale until they do not, and trains on.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/layers/DistributedParameter.hpp>
#include <hybrid3d/train/Trainer.hpp>

#include "GridCases.hpp"
#include "TrainingSamples.hpp"

namespace hybrid3d::test {
namespace {

namespace fs = std::filesystem;
constexpr int S = 16;

std::string scratch(const std::string& name) {
  return scratchDirectory("mixed_precision_trainer_test", name);
}

TrainConfig smallConfig(const std::string& dir, const std::vector<std::string>& train) {
  return smallCosmoFlowRun(dir, train, S);
}

Int3 gridFor(int world) { return world % 2 == 0 ? Int3{2, 1, 1} : Int3{1, 1, 1}; }

// Every parameter's global tensor (float master weights whatever T is).
template <class T>
std::vector<float> parameters(Trainer<T>& t) {
  std::vector<float> all;
  for (const auto& p : t.model().graph->parameters()) {
    const std::vector<float> g = gatherGlobal(p.param, p.param.value, MPI_COMM_WORLD);
    all.insert(all.end(), g.begin(), g.end());
  }
  return all;
}

// Validation MSE before and after `steps` steps of `c` in activation type T.
template <class T>
std::pair<double, double> learn(const ProcessGrid& grid, const TrainConfig& c, int steps) {
  Trainer<T> t(grid, c);
  const double before = t.evaluate().mse;
  for (int s = 0; s < steps; ++s) t.step();
  return {before, t.evaluate().mse};
}

TEST(MixedPrecisionTrainer, BFloat16LearnsAsFloatDoes) {
  const std::string dir = scratch("learn");
  const auto train = writeLevelSamples(dir, 32, S, 1);
  if (worldRank() == 0) fs::create_directories(dir + "/validation");
  MPI_Barrier(MPI_COMM_WORLD);
  writeLevelSamples(dir + "/validation", 8, S, 2);
  TrainConfig c = smallConfig(dir, train);
  c.data.validation = dir + "/validation";
  ProcessGrid grid(MPI_COMM_WORLD, gridFor(worldSize()));
  const auto [floatBefore, floatAfter] = learn<float>(grid, c, 100);
  const auto [bfBefore, bfAfter] = learn<bfloat16>(grid, c, 100);
  if (worldRank() == 0)
    std::printf(
        "  validation MSE before / after 100 steps: float %.4f / %.4f, bfloat16 %.4f / %.4f\n",
        floatBefore, floatAfter, bfBefore, bfAfter);
  // The same initial weights: the untrained model's error agrees to bfloat16's rounding.
  EXPECT_NEAR(bfBefore, floatBefore, 0.02 * floatBefore);
  EXPECT_LT(bfAfter, 0.65 * bfBefore);  // as float's own test (TrainerTest.cpp) asks
  // The criterion for the demo, held here on a short run: within 10 % of float's.
  EXPECT_LT(std::abs(bfAfter - floatAfter), 0.1 * floatAfter);
}

// A run of `steps` in T from `restartFrom` (or fresh) into `out`: its parameters at the end.
template <class T>
std::vector<float> runAs(const ProcessGrid& grid, TrainConfig c, const std::string& out,
                         long long steps, const std::string& restartFrom,
                         std::vector<std::string>* notes = nullptr) {
  c.outputDir = out;
  c.maxSteps = steps;
  c.restartFrom = restartFrom;
  Trainer<T> t(grid, c);
  if (notes) *notes = t.restartNotes();
  if (!restartFrom.empty()) {
    // Loaded bit for bit: the checkpoint's float master weights are the run's.
    Trainer<float> saved(grid, [&] {
      TrainConfig s = c;
      s.outputDir = out + "_peek";
      return s;
    }());
    saved.loadWeights(restartFrom);
    EXPECT_EQ(parameters(t), parameters(saved));
  }
  t.run();
  return parameters(t);
}

TEST(MixedPrecisionTrainer, CheckpointsRestartAcrossPrecisions) {
  const std::string dir = scratch("restart");
  const auto train = writeLevelSamples(dir, 8, S, 3);
  const TrainConfig c = smallConfig(dir, train);
  ProcessGrid grid(MPI_COMM_WORLD, gridFor(worldSize()));
  runAs<bfloat16>(grid, c, dir + "/bf16", 3, "");
  std::vector<std::string> notes;
  const std::vector<float> asFloat =
      runAs<float>(grid, c, dir + "/float_from_bf16", 5, dir + "/bf16/checkpoint.h5", &notes);
  bool said = false;  // among the notes (the output directory changed too)
  for (const std::string& n : notes)
    said = said ||
           (n.find("precision") != std::string::npos && n.find("bfloat16") != std::string::npos);
  EXPECT_TRUE(said) << "no restart note names the precision change";
  runAs<float>(grid, c, dir + "/float", 3, "");
  const std::vector<float> asBf16 =
      runAs<bfloat16>(grid, c, dir + "/bf16_from_float", 5, dir + "/float/checkpoint.h5");
  for (float v : asFloat) ASSERT_TRUE(std::isfinite(v));
  for (float v : asBf16) ASSERT_TRUE(std::isfinite(v));
}

TEST(MixedPrecisionTrainer, HalfSkipsOverflowingStepsAndLowersTheScale) {
  const std::string dir = scratch("half");
  const auto train = writeLevelSamples(dir, 8, S, 5);
  TrainConfig c = smallConfig(dir, train);
  c.lossScale.initial = std::ldexp(1.0, 60);  // far past half's range: the first steps overflow
  c.lossScale.growthInterval = 1000;
  ProcessGrid grid(MPI_COMM_WORLD, gridFor(worldSize()));
  Trainer<float16> t(grid, c);
  const std::vector<float> start = parameters(t);
  for (int s = 0; s < 60; ++s) ASSERT_TRUE(std::isfinite(t.step())) << "step " << s;
  EXPECT_GT(t.skippedSteps(), 0);
  EXPECT_LT(t.skippedSteps(), 60);  // it found a scale that works and trained on
  EXPECT_EQ(t.lossScale(), std::ldexp(1.0, 60 - int(t.skippedSteps())));
  const std::vector<float> end = parameters(t);
  std::size_t changed = 0;
  for (std::size_t i = 0; i < end.size(); ++i) {
    ASSERT_TRUE(std::isfinite(end[i]));
    changed += end[i] != start[i];
  }
  EXPECT_GT(changed, 0u);  // trained (Adam leaves a weight whose gradient stayed 0 alone)
}

}  // namespace
}  // namespace hybrid3d::test
