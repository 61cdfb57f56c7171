// The trainer end to end on small sample files written here: it learns a learnable task,
// continues bit-identically from a checkpoint, stops every rank on a NaN loss, and exchanges
// no halo for the input ghosts it reads from the files.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/layers/DistributedParameter.hpp>
#include <hybrid3d/train/Trainer.hpp>

#include "GridCases.hpp"
#include "TrainingSamples.hpp"

namespace hybrid3d::test {
namespace {

namespace fs = std::filesystem;
constexpr int S = 16;

// A folder per test and rank count (CTest runs registrations side by side).
std::string scratch(const std::string& name) { return scratchDirectory("trainer_test", name); }

std::vector<std::string> writeSamples(const std::string& dir, int count, unsigned seed,
                                      bool poison = false) {
  return writeLevelSamples(dir, count, S, seed, poison);
}

TrainConfig smallConfig(const std::string& dir, const std::vector<std::string>& train) {
  TrainConfig c = smallCosmoFlowRun(dir, train, S);
  c.schedule.baseRate = 1e-3;
  return c;
}

// Two ranks per sample when the world splits evenly (G = world / 2), else one.
Int3 gridFor(int world) { return world % 2 == 0 ? Int3{2, 1, 1} : Int3{1, 1, 1}; }

// Every parameter's global tensor (the trainers here run on grids of MPI_COMM_WORLD).
std::vector<double> parameters(Trainer<float>& t) {
  std::vector<double> all;
  for (const auto& p : t.model().graph->parameters()) {
    const std::vector<float> g = gatherGlobal(p.param, p.param.value, MPI_COMM_WORLD);
    all.insert(all.end(), g.begin(), g.end());
  }
  return all;
}

TEST(Trainer, LearnsATaskTheInputDetermines) {
  const std::string dir = scratch("learn");
  const auto train = writeSamples(dir, 32, 1);
  if (worldRank() == 0) fs::create_directories(dir + "/validation");
  MPI_Barrier(MPI_COMM_WORLD);
  writeSamples(dir + "/validation", 8, 2);
  TrainConfig c = smallConfig(dir, train);
  c.data.validation = dir + "/validation";
  c.schedule.baseRate = 1e-4;  // Adam; CosmoFlow has no batch norm and overshoots above ~3e-4
  ProcessGrid grid(MPI_COMM_WORLD, gridFor(worldSize()));
  Trainer<float> t(grid, c);
  const EvalSummary before = t.evaluate();
  for (int s = 0; s < 100; ++s) {
    const double loss = t.step();
    if (std::getenv("HYBRID3D_TEST_VERBOSE") && worldRank() == 0)
      std::printf("step %d loss %g\n", s, loss);
  }
  const EvalSummary after = t.evaluate();
  ASSERT_TRUE(after.present);
  // Targets are uniform in [-1, 1]: predicting their mean scores about 1/3 (measured: 0.34
  // before training, 0.18 after these 100 steps on 2 ranks). Held-out samples must show it.
  EXPECT_LT(after.mse, 0.65 * before.mse) << "validation MSE before training " << before.mse;
}

// Validation metrics of a fresh (untrained, same seed) model over `validation`, with the given
// validation mini-batch on `grid`.
EvalSummary validate(const ProcessGrid& grid, TrainConfig c, int validationBatch) {
  c.validationBatch = validationBatch;
  Trainer<double> t(grid, c);
  return t.evaluate();
}

TEST(Trainer, ValidationEvaluatesEverySampleOnceWhateverTheBatch) {
  // 5 validation samples with batches that leave a partial last batch (2, 3, 4), one larger
  // than the set (7) and one larger than the model's batch (7 > 4: two passes per batch). With
  // G = 2 (4 ranks) batches 1 and 3 leave group 1 without a sample in some batches. The metrics
  // must be those of one sample at a time on one rank.
  const std::string dir = scratch("validation");
  const auto train = writeSamples(dir, 4, 8);
  if (worldRank() == 0) fs::create_directories(dir + "/validation");
  MPI_Barrier(MPI_COMM_WORLD);
  const int N = 5;
  writeSamples(dir + "/validation", N, 9);
  TrainConfig c = smallConfig(dir, train);
  c.data.validation = dir + "/validation";
  c.data.prefetch = false;

  TrainConfig single = c;
  single.globalBatch = 1;
  const EvalSummary reference = validate(ProcessGrid(MPI_COMM_SELF, {1, 1, 1}), single, 1);
  ASSERT_EQ(reference.samples, N);
  ASSERT_GT(reference.mse, 0);
  // Per target: one value each, and the total is their mean (every sample has every target).
  ASSERT_GT(reference.targetMse.size(), 1u);
  double meanOfTargets = 0;
  for (double m : reference.targetMse) meanOfTargets += m / double(reference.targetMse.size());
  EXPECT_NEAR(meanOfTargets, reference.mse, 1e-12 * reference.mse);

  ProcessGrid grid(MPI_COMM_WORLD, gridFor(worldSize()));
  for (int batch : {1, 2, 3, 4, 7}) {
    const EvalSummary v = validate(grid, c, batch);
    EXPECT_EQ(v.samples, N) << "validation mini-batch " << batch;
    EXPECT_NEAR(v.mse, reference.mse, 1e-10 * reference.mse) << "validation mini-batch " << batch;
    EXPECT_NEAR(v.mae, reference.mae, 1e-10 * reference.mae) << "validation mini-batch " << batch;
    EXPECT_NEAR(v.loss, reference.loss, 1e-10 * reference.loss)
        << "validation mini-batch " << batch;
    ASSERT_EQ(v.targetMse.size(), reference.targetMse.size());
    for (std::size_t f = 0; f < v.targetMse.size(); ++f)
      EXPECT_NEAR(v.targetMse[f], reference.targetMse[f], 1e-10 * reference.mse)
          << "target " << f << ", validation mini-batch " << batch;
  }
}

TEST(Trainer, RestartFromACheckpointContinuesBitIdentically) {
  const std::string dir = scratch("restart");
  const auto train = writeSamples(dir, 8, 3);
  TrainConfig c = smallConfig(dir, train);
  c.model.dropoutKeep = 0.8;  // masks are keyed by the step: a restart must reproduce them
  c.data.prefetch = true;
  ProcessGrid grid(MPI_COMM_WORLD, gridFor(worldSize()));

  c.maxSteps = 5;  // 2 steps per epoch: the checkpoint falls in the middle of epoch 2
  std::vector<double> straight;
  {
    c.outputDir = dir + "/straight";
    Trainer<float> t(grid, c);
    t.run();
    straight = parameters(t);
  }
  c.outputDir = dir + "/first";
  c.maxSteps = 3;
  { Trainer<float>(grid, c).run(); }
  c.outputDir = dir + "/second";
  c.maxSteps = 5;
  c.restartFrom = dir + "/first/checkpoint.h5";
  Trainer<float> resumed(grid, c);
  EXPECT_EQ(resumed.steps(), 3);
  resumed.run();
  EXPECT_EQ(resumed.steps(), 5);
  const std::vector<double> again = parameters(resumed);
  ASSERT_EQ(again.size(), straight.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < again.size(); ++i) differ += again[i] != straight[i];
  EXPECT_EQ(differ, 0u) << "of " << again.size() << " parameters";
}

// Runs `steps` steps of `c` into `out` and returns the checkpoint written there.
std::string checkpointAfter(const ProcessGrid& grid, TrainConfig c, const std::string& out,
                            long long steps) {
  c.outputDir = out;
  c.maxSteps = steps;
  Trainer<float>(grid, c).run();
  return out + "/checkpoint.h5";
}

// True on every rank when making the trainer throws, on every rank, a message holding `expect`.
template <class T>
bool refusedWith(const ProcessGrid& grid, const TrainConfig& c, const std::string& expect) {
  bool refused = false;
  try {
    Trainer<T> t(grid, c);
    ADD_FAILURE() << "accepted a restart that should name " << expect;
  } catch (const Error& e) {
    refused = std::string(e.what()).find(expect) != std::string::npos;
    EXPECT_TRUE(refused) << e.what();
  }
  return allTrue(refused);
}

TEST(Trainer, RestartRefusesAChangeOfMeaningNamingTheKeyAndBothValues) {
  const std::string dir = scratch("refuse");
  const auto train = writeSamples(dir, 8, 7);
  TrainConfig c = smallConfig(dir, train);  // mini-batch 4: up to 4 groups
  ProcessGrid grid(MPI_COMM_WORLD, gridFor(worldSize()));
  c.restartFrom = checkpointAfter(grid, c, dir + "/first", 1);
  c.outputDir = dir + "/second";

  TrainConfig r = c;
  r.globalBatch = 8;  // issue 9 saw such a restart resume silently, at another epoch and step
  EXPECT_TRUE(
      refusedWith<float>(grid, r, "'mini-batch' was 4 in the checkpoint's run but is 8 now"));
  r = c;
  r.model.seed = 5;
  EXPECT_TRUE(refusedWith<float>(grid, r, "'seed' was 4 in the checkpoint's run but is 5 now"));
  r = c;
  r.data.trainFiles.resize(6);
  EXPECT_TRUE(
      refusedWith<float>(grid, r, "'training samples' was 8 in the checkpoint's run but is 6"));
  r = c;
  r.optimizer = "sgd";
  EXPECT_TRUE(
      refusedWith<float>(grid, r, "'optimizer' was adam in the checkpoint's run but is sgd"));
  // Not the precision: checkpoints hold float master weights, and a restart in another precision
  // goes ahead, reported (MixedPrecisionTrainerTest.cpp).
  if (worldSize() % 2 == 0) {  // 2 -> 1 spatial ranks per sample: twice the groups
    ProcessGrid moreGroups(MPI_COMM_WORLD, {1, 1, 1});
    r = c;
    r.model.batchNormPerGroup = true;
    EXPECT_TRUE(refusedWith<float>(moreGroups, r, "'batch norm statistics' was global"));
    TrainConfig first = c;
    first.model.batchNormPerGroup = true;
    first.restartFrom.clear();
    r.restartFrom = checkpointAfter(grid, first, dir + "/pergroup", 1);
    EXPECT_TRUE(refusedWith<float>(
        moreGroups, r, "'data-parallel groups' was " + std::to_string(grid.numGroups())));
  }
}

TEST(Trainer, RestartAllowsMoreEpochsAnotherGridAndOutputDirectoryAndSaysSo) {
  const std::string dir = scratch("allow");
  const auto train = writeSamples(dir, 8, 8);
  TrainConfig c = smallConfig(dir, train);
  c.epochs = 2;  // 2 steps per epoch
  ProcessGrid grid(MPI_COMM_WORLD, gridFor(worldSize()));
  c.restartFrom = checkpointAfter(grid, c, dir + "/first", 3);
  // With an even world: one spatial rank per sample instead of two, so twice the groups
  // (global batch norm: the sums are over the world either way).
  const Int3 dims = gridFor(worldSize());
  ProcessGrid other(MPI_COMM_WORLD, worldSize() % 2 == 0 ? Int3{1, 1, 1} : dims);
  c.epochs = 3;
  c.outputDir = dir + "/second";
  c.maxSteps = 5;
  Trainer<float> t(other, c);
  EXPECT_EQ(t.steps(), 3);
  const std::vector<std::string>& notes = t.restartNotes();
  auto noted = [&](const std::string& text) {
    for (const auto& n : notes)
      if (n == text) return true;
    return false;
  };
  EXPECT_TRUE(noted("epochs 2 -> 3"));
  EXPECT_TRUE(noted("output directory " + dir + "/first -> " + dir + "/second"));
  if (worldSize() % 2 == 0) {
    EXPECT_TRUE(noted("spatial grid " + toString(dims) + " -> 1x1x1"));
    EXPECT_TRUE(noted("data-parallel groups " + std::to_string(grid.numGroups()) + " -> " +
                      std::to_string(other.numGroups())));
  }
  t.run();
  EXPECT_EQ(t.steps(), 5);
  // The new directory's metrics file starts with its header, then step 4.
  if (worldRank() == 0) {
    std::ifstream csv(dir + "/second/metrics.csv");
    std::string header, row;
    std::getline(csv, header);
    std::getline(csv, row);
    EXPECT_EQ(header.rfind("kind,step,epoch,loss", 0), 0u) << header;
    EXPECT_EQ(row.rfind("train,4,2,", 0), 0u) << row;
  }
}

// Segmentation samples for unet3d: one channel of noise, three classes by its level.
std::vector<std::string> writeSegmentationSamples(const std::string& dir, int count,
                                                  unsigned seed) {
  std::vector<std::string> files;
  for (int s = 0; s < count; ++s) files.push_back(dir + "/seg_" + std::to_string(s) + ".h5");
  if (worldRank() == 0) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> noise(0, 1);
    for (int s = 0; s < count; ++s) {
      std::vector<float> volume(S * S * S);
      std::vector<int> labels(S * S * S);
      for (int i = 0; i < S * S * S; ++i) {
        volume[i] = noise(rng) + 0.5f * s;
        labels[i] = volume[i] < 0 ? 0 : volume[i] < 1 ? 1 : 2;
      }
      generate::SampleWriter w(MPI_COMM_SELF, files[s]);
      w.writeWhole<float>("/volume", {1, S, S, S}, volume.data());
      w.writeWhole<int>("/segmentation", {S, S, S}, labels.data());
      w.commit();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return files;
}

std::vector<double> buffers(Trainer<float>& t) {
  std::vector<double> all;
  for (const auto& p : t.model().graph->buffers()) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.param.value);
    all.insert(all.end(), h.data(), h.data() + h.size());
  }
  return all;
}

double maxDifference(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

TEST(Trainer, GroupBatchNormStatisticsAreAveragedIntoCheckpointsSoARestartIsExact) {
  if (worldSize() % 2 != 0) GTEST_SKIP() << "needs two data-parallel groups";
  const std::string dir = scratch("groupbn");
  TrainConfig c;
  c.model.architecture = "unet3d";
  c.model.inputWidth = S;
  c.model.seed = 3;
  c.model.batchNormPerGroup = true;
  c.model.convWorkspaceBytes = std::size_t(4) << 20;  // fewer pages to fault in at 16^3
  c.data.trainFiles = writeSegmentationSamples(dir, 4, 11);
  c.data.train = "unused";
  c.globalBatch = 2;  // one sample per group
  c.epochs = 10;
  c.optimizer = "adam";
  c.printEvery = 1000000;
  ProcessGrid grid(MPI_COMM_WORLD, {worldSize() / 2, 1, 1});  // G = 2
  ASSERT_EQ(grid.numGroups(), 2);

  // Uninterrupted, 2 steps: the checkpoint holds the groups' mean, and the groups differ.
  std::vector<double> straightParameters, straightSaved;
  double spread = 0;
  {
    c.outputDir = dir + "/straight";
    c.maxSteps = 2;
    Trainer<float> t(grid, c);
    t.run();
    straightParameters = parameters(t);
    const std::vector<double> live = buffers(t);
    std::vector<double> sum = live, other = live;
    MPI_Allreduce(MPI_IN_PLACE, sum.data(), int(sum.size()), MPI_DOUBLE, MPI_SUM, grid.dataComm());
    MPI_Allreduce(MPI_IN_PLACE, other.data(), int(other.size()), MPI_DOUBLE, MPI_MIN,
                  grid.dataComm());
    spread = maxDifference(live, other);
    MPI_Allreduce(MPI_IN_PLACE, &spread, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    t.loadWeights(t.checkpointPath());
    straightSaved = buffers(t);
    for (double& v : sum) v /= 2;
    EXPECT_LE(maxDifference(straightSaved, sum), 1e-6) << "the checkpoint is not the groups' mean";
  }
  // Stopped after 1 step, resumed for the second: the same parameters bit for bit (training
  // uses batch statistics) and the same mean running statistics up to rounding. Restarting
  // both groups from one group's values would be off by about 0.9 x spread / 2.
  c.outputDir = dir + "/first";
  c.maxSteps = 1;
  { Trainer<float>(grid, c).run(); }
  c.restartFrom = dir + "/first/checkpoint.h5";
  c.outputDir = dir + "/second";
  c.maxSteps = 2;
  Trainer<float> resumed(grid, c);
  resumed.run();
  EXPECT_EQ(parameters(resumed), straightParameters);
  resumed.loadWeights(resumed.checkpointPath());
  const double tolerance = 1e-5;
  EXPECT_GT(spread, 100 * tolerance) << "the groups' statistics did not drift apart: no test";
  EXPECT_LE(maxDifference(buffers(resumed), straightSaved), tolerance);
  if (std::getenv("HYBRID3D_TEST_VERBOSE") && worldRank() == 0)
    std::printf("groups' spread %g, resumed vs uninterrupted %g\n", spread,
                maxDifference(buffers(resumed), straightSaved));
}

TEST(Trainer, NanLossStopsEveryRankWithTheStep) {
  const std::string dir = scratch("nan");
  TrainConfig c = smallConfig(dir, writeSamples(dir, 4, 5));
  // The first update blows the weights up: the second step's loss is not finite (steps are
  // counted from 1, as in the progress lines and metrics.csv).
  c.schedule.baseRate = 1e30;
  ProcessGrid grid(MPI_COMM_WORLD, gridFor(worldSize()));
  Trainer<float> t(grid, c);
  t.step();
  bool threw = false;
  try {
    t.step();
  } catch (const Error& e) {
    const std::string what = e.what();
    threw = what.find("training: the loss is ") != std::string::npos &&
            what.find(" at step 2 (epoch 1; batch ") != std::string::npos &&
            what.find("; the first non-finite value: ") != std::string::npos;
    EXPECT_TRUE(threw) << what;
  }
  EXPECT_TRUE(allTrue(threw));
}

// A NaN in a sample's input is refused when the sample is read, naming the file, on every
// rank (before the reader checked, it surfaced only as a NaN loss).
TEST(Trainer, NanInASampleStopsEveryRankNamingTheFile) {
  const std::string dir = scratch("nansample");
  const auto train = writeSamples(dir, 4, 5, true);
  TrainConfig c = smallConfig(dir, train);
  ProcessGrid grid(MPI_COMM_WORLD, gridFor(worldSize()));
  Trainer<float> t(grid, c);
  bool threw = false;
  try {
    t.step();
  } catch (const Error& e) {
    const std::string what = e.what();
    threw = what.find("sample_") != std::string::npos &&
            what.find(": dataset '/full' holds NaN or Inf") != std::string::npos;
    EXPECT_TRUE(threw) << what;
  }
  EXPECT_TRUE(allTrue(threw));
}

// cosmoflow_mlperf takes log1p of its input in a layer: the deck's Data/log1p on top would
// apply it twice, silently; refused on every rank, naming the key.
TEST(Trainer, RefusesLog1pOfTheDataForAModelThatTakesItItself) {
  const std::string dir = scratch("log1p");
  TrainConfig c = smallConfig(dir, writeSamples(dir, 2, 8));
  c.model.architecture = "cosmoflow_mlperf";
  c.model.inputWidth = 32;
  c.data.log1p = true;
  // One rank per sample (a 32^3 input is too small to split 4 or 8 ways for its pools).
  c.globalBatch = worldSize();
  const ProcessGrid grid(MPI_COMM_WORLD, {1, 1, 1});
  bool threw = false;
  try {
    Trainer<float> t(grid, c);
  } catch (const Error& e) {
    threw = std::string(e.what()).find("Data/log1p would take log(1 + x) a second time") !=
            std::string::npos;
    EXPECT_TRUE(threw) << e.what();
  }
  EXPECT_TRUE(threw);
}

// The global mini-batch is split evenly over the G data-parallel groups (here G = the world,
// one rank per sample): a mini-batch that is not a positive multiple of G is refused on every
// rank with a message naming both, one that is is accepted. At one rank (G = 1) only the
// non-positive mini-batch can be refused.
TEST(Trainer, MiniBatchMustSplitOverTheGroups) {
  const int G = worldSize();
  const std::string dir = scratch("batch");
  TrainConfig c = smallConfig(dir, writeSamples(dir, std::max(4, G), 6));
  const ProcessGrid grid(MPI_COMM_WORLD, {1, 1, 1});
  ASSERT_EQ(grid.numGroups(), G);
  auto refusal = [&](int batch) -> std::string {
    c.globalBatch = batch;
    try {
      Trainer<float> t(grid, c);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  std::vector<int> refused = {0, -G};
  if (G > 1) refused.push_back(G + 1);
  for (int batch : refused) {
    const std::string why = refusal(batch);
    EXPECT_NE(
        why.find("mini-batch " + std::to_string(batch) + " is not a positive multiple of the " +
                 std::to_string(G) + " data-parallel groups"),
        std::string::npos)
        << "mini-batch " << batch << " over " << G << " groups: '" << why << "'";
  }
  EXPECT_EQ(refusal(G), "") << "mini-batch " << G << " over " << G << " groups was refused";
}

// Names of the Kokkos profiling regions entered while recording (the halos push theirs).
std::vector<std::string>& regionsSeen() {
  static std::vector<std::string> seen;
  return seen;
}

// The reader fills the input's ghosts from the file, so conv1 exchanges no halo for them
// (performance issue: read or exchanged, not both), while conv2 still does; the cli test
// GradientsAgreeOnOneAndTwoRanks shows the gradients are unchanged by it.
TEST(Trainer, TheInputsGhostsAreReadNotExchanged) {
  const std::string dir = scratch("ghosts");
  const auto train = writeSamples(dir, 4, 7);
  if (worldSize() % 2 != 0) GTEST_SKIP() << "needs 2 ranks per sample (an even world)";
  ProcessGrid grid(MPI_COMM_WORLD, {2, 1, 1});
  Trainer<float> t(grid, smallConfig(dir, train));
  regionsSeen().clear();
  Kokkos::Tools::Experimental::set_push_region_callback(
      [](const char* name) { regionsSeen().emplace_back(name); });
  t.step();
  Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
  auto seen = [](const std::string& name) {
    return std::count(regionsSeen().begin(), regionsSeen().end(), name);
  };
  EXPECT_EQ(seen("hybrid3d::Conv3d::forward conv1"), 1);
  EXPECT_EQ(seen("hybrid3d::Halo::gather[conv1]"), 0);
  EXPECT_GE(seen("hybrid3d::Halo::gather[conv2]"), 1);  // begin and end push it
}

}  // namespace
}  // namespace hybrid3d::test
