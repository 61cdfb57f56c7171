// Training on layer grids (docs/design.md section 11) end to end, against the 1-rank run: 20 steps
// give the same loss curve (float, to the digits the progress line prints); a checkpoint
// written on a staged layout restarts on one rank, on the spatial grid alone and on another
// staged layout, continuing to the same losses; validation with a short last mini-batch
// (fewer samples than the output's sub-grids) gives the 1-rank metrics.
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>

#include <hybrid3d/train/Trainer.hpp>

#include "GridCases.hpp"
#include "TrainingSamples.hpp"

namespace hybrid3d::test {
namespace {

constexpr int S = 16;

// A staged layout of the world's ranks for CosmoFlow 16^3 (none on one rank): the spatial grid
// and the rule. 2 ranks: 2x1x1, the deep part and the dense head on 1x1x1 (a sample per rank);
// 4 and more: 4x1x1 (x groups), coarsened by the minimum box width (4x1x1 -> 2x1x1 -> 1x1x1).
struct StagedLayout {
  Int3 spatial;
  LayerGridRule rule;
};
StagedLayout stagedLayout(int world) {
  StagedLayout s;
  if (world < 4) {
    s.spatial = {2, 1, 1};
    s.rule.entries = parseLayerGridEntries("conv3..fc3=1x1x1");
  } else {
    s.spatial = {4, 1, 1};
    s.rule.minimumBoxWidth = 2;
  }
  return s;
}
// Another staged layout of the same ranks, for restarts.
StagedLayout otherStagedLayout(int world) {
  StagedLayout s;
  s.spatial = world < 4 ? Int3{2, 1, 1} : Int3{2, 2, 1};
  s.rule.entries =
      parseLayerGridEntries(world < 4 ? "fc1..fc3=1x1x1" : "conv2..pool3=2x1x1, conv4..fc3=1x1x1");
  return s;
}

TrainConfig config(const std::string& dir, const std::vector<std::string>& files) {
  TrainConfig c = smallCosmoFlowRun(dir, files, S);
  c.model.dropoutKeep = 0.8;  // masks keyed by global sample: the same on every layout
  c.data.prefetch = false;
  c.checkpointMinutes = 0;
  return c;
}

// The losses of the trainer's next `steps` steps.
template <class T>
std::vector<double> losses(Trainer<T>& t, int steps) {
  std::vector<double> out;
  for (int s = 0; s < steps; ++s) out.push_back(t.step());
  return out;
}

// World rank 0's values on every rank.
std::vector<double> fromRankZero(std::vector<double> v, int count) {
  v.resize(std::size_t(count));
  MPI_Bcast(v.data(), count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return v;
}

// The 1-rank run of `c` for `steps` steps, on world rank 0 alone, given to every rank.
std::vector<double> oneRankLosses(TrainConfig c, int steps, const std::string& dir) {
  std::vector<double> l;
  if (worldRank() == 0) {
    c.outputDir = dir;
    ProcessGrid self(MPI_COMM_SELF, {1, 1, 1});
    Trainer<float> t(self, c);
    l = losses(t, steps);
  }
  return fromRankZero(l, steps);
}

// The loss curves agree to the digits the progress line prints (%.5g) where the two runs sum in
// different orders: within 1e-4 relative.
void expectSameCurve(const std::vector<double>& got, const std::vector<double>& want,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  int printedAlike = 0;
  for (std::size_t s = 0; s < got.size(); ++s) {
    EXPECT_NEAR(got[s], want[s], 1e-4 * std::abs(want[s])) << what << ", step " << s + 1;
    char a[32], b[32];
    std::snprintf(a, sizeof a, "%.5g", got[s]);
    std::snprintf(b, sizeof b, "%.5g", want[s]);
    printedAlike += std::string(a) == b;
  }
  if (worldRank() == 0)
    std::printf("[ curve ] %s: %d of %zu losses print alike (%%.5g), last %.7g vs %.7g\n",
                what.c_str(), printedAlike, got.size(), got.back(), want.back());
}

TEST(LayerGridTraining, TwentyStepsGiveTheOneRankLossCurve) {
  if (worldSize() < 2) GTEST_SKIP() << "a staged layout needs 2 or more ranks";
  const std::string dir = scratchDirectory("layer_grid_training", "curve");
  const auto files = writeLevelSamples(dir, 16, S, 21);
  const TrainConfig c = config(dir, files);
  const std::vector<double> want = oneRankLosses(c, 20, dir + "/one");
  const StagedLayout s = stagedLayout(worldSize());
  TrainConfig staged = c;
  staged.model.layerGrids = s.rule;
  staged.outputDir = dir + "/staged";
  ProcessGrid grid(MPI_COMM_WORLD, s.spatial);
  Trainer<float> t(grid, staged);
  expectSameCurve(losses(t, 20), want, "staged " + toString(s.spatial));
}

TEST(LayerGridTraining, CheckpointsAreLayoutFree) {
  if (worldSize() < 2) GTEST_SKIP() << "a staged layout needs 2 or more ranks";
  const std::string dir = scratchDirectory("layer_grid_training", "restart");
  const auto files = writeLevelSamples(dir, 8, S, 22);
  TrainConfig c = config(dir, files);
  const std::vector<double> want = oneRankLosses(c, 6, dir + "/one");
  const std::vector<double> tail(want.begin() + 3, want.end());

  // 3 steps on a staged layout, then 3 more from its checkpoint on one rank and on one grid for
  // every layer; and from that grid's checkpoint on another staged layout.
  const StagedLayout s = stagedLayout(worldSize()), other = otherStagedLayout(worldSize());
  ProcessGrid grid(MPI_COMM_WORLD, s.spatial);
  TrainConfig first = c;
  first.model.layerGrids = s.rule;
  first.outputDir = dir + "/staged";
  first.maxSteps = 3;
  { Trainer<float>(grid, first).run(); }
  TrainConfig resume = c;
  resume.restartFrom = dir + "/staged/checkpoint.h5";
  resume.outputDir = dir + "/resumed_one";
  std::vector<double> l;
  if (worldRank() == 0) {
    ProcessGrid self(MPI_COMM_SELF, {1, 1, 1});
    Trainer<float> t(self, resume);
    EXPECT_EQ(t.steps(), 3);
    l = losses(t, 3);
  }
  expectSameCurve(fromRankZero(l, 3), tail, "staged -> 1 rank");
  // One grid for every layer: 2x1x1, the world in groups (a finer one is too fine for 16^3).
  ProcessGrid plainGrid(MPI_COMM_WORLD, {2, 1, 1});
  resume.outputDir = dir + "/resumed_plain";
  {
    Trainer<float> t(plainGrid, resume);
    expectSameCurve(losses(t, 3), tail, "staged -> 2x1x1 for every layer");
  }
  // And back: from the plain spatial grid's checkpoint to a staged layout.
  {
    TrainConfig plain = c;
    plain.outputDir = dir + "/plain";
    plain.maxSteps = 3;
    { Trainer<float>(plainGrid, plain).run(); }
    TrainConfig back = c;
    back.model.layerGrids = other.rule;
    back.restartFrom = dir + "/plain/checkpoint.h5";
    back.outputDir = dir + "/resumed_staged";
    ProcessGrid otherGrid(MPI_COMM_WORLD, other.spatial);
    Trainer<float> t(otherGrid, back);
    expectSameCurve(losses(t, 3), tail, "plain -> staged " + toString(other.spatial));
  }
}

TEST(LayerGridTraining, ShortLastValidationBatchGivesTheOneRankMetrics) {
  if (worldSize() < 2) GTEST_SKIP() << "a staged layout needs 2 or more ranks";
  const std::string dir = scratchDirectory("layer_grid_training", "validation");
  const auto files = writeLevelSamples(dir, 4, S, 23);
  if (worldRank() == 0) std::filesystem::create_directories(dir + "/validation");
  MPI_Barrier(MPI_COMM_WORLD);
  writeLevelSamples(dir + "/validation", 5, S, 24);
  TrainConfig c = config(dir, files);
  c.data.validation = dir + "/validation";
  EvalSummary want;
  if (worldRank() == 0) {
    TrainConfig one = c;
    one.globalBatch = 1;
    one.validationBatch = 1;
    ProcessGrid self(MPI_COMM_SELF, {1, 1, 1});
    want = Trainer<double>(self, one).evaluate();
  }
  double w[2] = {want.mse, want.loss};
  MPI_Bcast(w, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  // The dense head on 1x1x1 sub-grids, one per rank (2 or more): the last validation batch of
  // 5 = 4 + 1 samples leaves every sub-grid but the first without a sample.
  const StagedLayout s = stagedLayout(worldSize());
  TrainConfig staged = c;
  staged.model.layerGrids = s.rule;
  ProcessGrid grid(MPI_COMM_WORLD, s.spatial);
  for (int batch : {4, 3}) {
    staged.validationBatch = batch;
    const EvalSummary got = Trainer<double>(grid, staged).evaluate();
    EXPECT_EQ(got.samples, 5) << "validation mini-batch " << batch;
    EXPECT_NEAR(got.mse, w[0], 1e-10 * w[0]) << "validation mini-batch " << batch;
    EXPECT_NEAR(got.loss, w[1], 1e-10 * w[1]) << "validation mini-batch " << batch;
  }
}

}  // namespace
}  // namespace hybrid3d::test
