// The run plan's batches against the trainer: the steps a dry run announces are the steps a run
// makes (training drops the last partial mini-batch; validation evaluates every sample once),
// over several set sizes, mini-batches and data-parallel groups; and the dry run lists the data
// as the run does and refuses a bad sample file by its metadata; the per-group batch they share.
#include <filesystem>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/generate/SampleWriter.hpp>
#include <hybrid3d/plan/RunPlan.hpp>
#include <hybrid3d/train/Trainer.hpp>

#include "GridCases.hpp"

namespace hybrid3d::test {
namespace {

namespace fs = std::filesystem;
constexpr int S = 16;

// `count` CosmoFlow samples of S^3 (constant volumes, targets 0.5) in `dir`, written by rank 0.
void writeSamples(const std::string& dir, int count, int channels = 4) {
  if (worldRank() == 0) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::vector<float> full(std::size_t(channels) * S * S * S, 1.0f), target(4, 0.5f);
    for (int s = 0; s < count; ++s) {
      generate::SampleWriter w(MPI_COMM_SELF, dir + "/sample_" + std::to_string(s) + ".h5");
      w.writeWhole<float>("/full", {Index(channels), S, S, S}, full.data());
      w.writeWhole<float>("/unitPar", {4}, target.data());
      w.commit();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

std::string scratch() { return "run_plan_test_np" + std::to_string(worldSize()); }

TrainConfig config(const std::string& dir, int batch, int validationBatch, int epochs) {
  TrainConfig c;
  c.model.architecture = "cosmoflow";
  c.model.inputWidth = S;
  c.data.train = dir + "/train";
  c.data.validation = dir + "/validation";
  c.data.prefetch = false;
  c.globalBatch = batch;
  c.validationBatch = validationBatch;
  c.epochs = epochs;
  c.outputDir = dir + "/run";
  c.printEvery = 1000000;
  c.checkpointMinutes = 0;
  return c;
}

Int3 gridFor(int world) { return world % 2 == 0 ? Int3{2, 1, 1} : Int3{1, 1, 1}; }

TEST(RunPlan, StepsPerEpochAreTheTrainersSteps) {
  const std::string dir = scratch() + "/steps";
  writeSamples(dir + "/train", 7);
  writeSamples(dir + "/validation", 5);
  ProcessGrid grid(MPI_COMM_WORLD, gridFor(worldSize()));
  const int G = grid.numGroups();
  // (mini-batch, validation mini-batch): 7 training samples leave a partial mini-batch, which
  // training drops; 5 validation samples a partial last batch (2, 3, the mini-batch) or one
  // batch larger than the set (7).
  for (const auto& [batch, validationBatch] :
       std::vector<std::pair<int, int>>{{2, 2}, {2 * G, 3}, {2 * G, 0}, {6, 7}}) {
    if (batch % G != 0) continue;
    SCOPED_TRACE("mini-batch " + std::to_string(batch) + ", validation mini-batch " +
                 std::to_string(validationBatch));
    TrainConfig c = config(dir, batch, validationBatch, 2);
    c.overwrite = true;  // every case trains into the same output directory
    const RunPlan plan = checkRun<float>(grid, c);
    const int vb = validationBatch > 0 ? validationBatch : batch;
    EXPECT_EQ(plan.train.steps, 7 / batch);               // the last partial mini-batch dropped
    EXPECT_EQ(plan.validation.steps, (5 + vb - 1) / vb);  // every sample once
    EXPECT_EQ(plan.train.listing.samples, 7);
    EXPECT_EQ(plan.validation.listing.samples, 5);
    EXPECT_EQ(plan.totalSteps, 2 * plan.train.steps);
    EXPECT_EQ(plan.train.localBatch, batch / G);
    EXPECT_EQ(plan.model.input.batch, batch / G);

    Trainer<float> trainer(grid, c);
    const EpochSummary last = trainer.run();
    EXPECT_EQ(trainer.steps(), plan.totalSteps);
    EXPECT_EQ(last.steps, plan.totalSteps) << "steps done at the end of the last epoch";
    EXPECT_EQ(last.validation.samples, plan.validation.listing.samples);
  }
}

TEST(RunPlan, MaxStepsCapsTheTotal) {
  const std::string dir = scratch() + "/max";
  writeSamples(dir + "/train", 8);
  ProcessGrid grid(MPI_COMM_WORLD, gridFor(worldSize()));
  TrainConfig c = config(dir, 2, 0, 3);
  c.data.validation.clear();
  c.maxSteps = 5;
  const RunPlan plan = checkRun<float>(grid, c);
  EXPECT_EQ(plan.train.steps, 4);
  EXPECT_EQ(plan.totalSteps, 5);
  EXPECT_EQ(plan.validation.listing.samples, 0);
}

// The per-group batch the trainer, the dry run and the planner share (train/TrainConfig.hpp):
// where some k >= 1 samples per group make up the mini-batch, each group takes k and builds its
// model for k; elsewhere (an uneven split, fewer samples than groups) the split is refused with
// one line naming both numbers.
TEST(RunPlan, GroupBatchSplitsTheMiniBatchEvenly) {
  TrainConfig c;
  c.model.batch = 99;  // replaced, whatever it was
  for (int batch = 0; batch <= 12; ++batch)
    for (int groups = 1; groups <= 5; ++groups) {
      SCOPED_TRACE(std::to_string(batch) + " samples over " + std::to_string(groups) + " groups");
      c.globalBatch = batch;
      int k = 0;  // the samples per group that make up the mini-batch, if any
      for (int n = 1; n * groups <= batch; ++n)
        if (n * groups == batch) k = n;
      EXPECT_EQ(batchSplits(c, groups), k > 0);
      if (k > 0) {
        EXPECT_EQ(groupBatch(c, groups), k);
        EXPECT_EQ(groupModelOptions(c, groups).batch, k);
        continue;
      }
      try {
        groupBatch(c, groups);
        ADD_FAILURE() << "an uneven split was not refused";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("mini-batch " + std::to_string(batch) +
                                             " is not a positive multiple of the " +
                                             std::to_string(groups) + " data-parallel groups"),
                  std::string::npos)
            << e.what();
      }
      EXPECT_THROW(groupModelOptions(c, groups), Error);
    }
}

// A sample with 3 channels where CosmoFlow reads 4: found from the metadata, named, on every rank.
TEST(RunPlan, RefusesASampleOfTheWrongShapeWithoutTraining) {
  const std::string dir = scratch() + "/shape";
  writeSamples(dir + "/train", 4);
  writeSamples(dir + "/bad", 1, 3);
  if (worldRank() == 0) fs::copy_file(dir + "/bad/sample_0.h5", dir + "/train/sample_9.h5");
  MPI_Barrier(MPI_COMM_WORLD);
  ProcessGrid grid(MPI_COMM_WORLD, gridFor(worldSize()));
  TrainConfig c = config(dir, 2, 0, 1);
  c.data.validation.clear();
  try {
    checkRun<float>(grid, c);
    FAIL() << "a 3-channel sample passed the check";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sample_9.h5: dataset '/full' has shape"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace hybrid3d::test
