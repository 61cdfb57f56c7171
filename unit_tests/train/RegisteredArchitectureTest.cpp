// The trainer knows no architecture or loss by name: an architecture registered in this file
// alone (as one new file under src/model/architectures/ would be) trains through the ordinary
// Trainer path, its regression task loading the targets and reporting the validation metrics.
#include <filesystem>
#include <random>

#include <gtest/gtest.h>

#include <hybrid3d/generate/SampleWriter.hpp>
#include <hybrid3d/model/Tasks.hpp>
#include <hybrid3d/train/Trainer.hpp>

#include "GridCases.hpp"

namespace hybrid3d::test {
namespace {

namespace fs = std::filesystem;
constexpr int S = 16;

// Kept small: a 3^3 convolution, two average pools and a dense layer regressing the four
// targets from the four channels.
ModelTraits tinyTraits(const ModelOptions& o) {
  if (o.inputWidth != S) fail("model: tiny_regressor needs an input width of ", S);
  ModelTraits t;
  t.inputChannels = 4;
  t.outputs = 4;
  t.task = &regressionTask();
  return t;
}

void tinyDefine(GraphBuilder& b, const ModelOptions&) {
  int x = b.conv("conv1", GraphBuilder::Input, 4, 3, 1, 1, true);
  x = b.leaky("act1", x, 0.01);
  x = b.avgPool("pool1", x);
  x = b.avgPool("pool2", x);
  b.flattenDense("fc1", x, 4);
}

std::optional<ParameterInit> tinyInitialization(const std::string&, const std::string& parameter,
                                                std::size_t dims) {
  if (parameter == "weight" && dims == 5) return ParameterInit{Init::HeNormal};
  if (parameter == "weight" && dims == 2) return ParameterInit{Init::GlorotUniform};
  if (parameter == "bias") return ParameterInit{Init::Constant, 0.0};
  return std::nullopt;
}

const bool tinyRegistered =
    (registerArchitecture({"tiny_regressor", tinyTraits, tinyDefine, tinyInitialization}), true);

// Samples whose four targets are the four channels' mean levels (plus voxel noise).
std::vector<std::string> writeSamples(const std::string& dir, int count, unsigned seed) {
  if (worldRank() == 0) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<std::string> files;
  for (int s = 0; s < count; ++s) files.push_back(dir + "/sample_" + std::to_string(s) + ".h5");
  if (worldRank() == 0) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> level(-1, 1), noise(-0.5, 0.5);
    for (int s = 0; s < count; ++s) {
      float target[4];
      std::vector<float> full(4 * S * S * S);
      for (int c = 0; c < 4; ++c) {
        target[c] = static_cast<float>(level(rng));
        for (int i = 0; i < S * S * S; ++i)
          full[c * S * S * S + i] = static_cast<float>(target[c] + noise(rng));
      }
      generate::SampleWriter w(MPI_COMM_SELF, files[s]);
      w.writeWhole<float>("/full", {4, S, S, S}, full.data());
      w.writeWhole<float>("/unitPar", {4}, target);
      w.commit();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return files;
}

TEST(RegisteredArchitecture, TrainsAndValidatesThroughTheTrainer) {
  ASSERT_TRUE(tinyRegistered);
  const std::string dir = "registered_architecture_np" + std::to_string(worldSize());
  TrainConfig c;
  c.model.architecture = "tiny_regressor";
  c.model.inputWidth = S;
  c.model.seed = 4;
  c.data.trainFiles = writeSamples(dir + "/train", 16, 1);
  c.data.train = "unused";
  c.data.validation = dir + "/validation";
  writeSamples(c.data.validation, 5, 2);
  c.globalBatch = 4;
  c.validationBatch = 3;  // a short last batch: padded slots count nothing
  c.epochs = 100;
  c.optimizer = "adam";
  c.schedule.baseRate = 1e-2;
  c.outputDir = dir + "/run";
  ProcessGrid grid(MPI_COMM_WORLD, {worldSize() % 2 == 0 ? 2 : 1, 1, 1});
  Trainer<float> t(grid, c);
  EXPECT_EQ(t.model().architecture, "tiny_regressor");
  const EvalSummary before = t.evaluate();
  for (int s = 0; s < 40; ++s) t.step();
  const EvalSummary after = t.evaluate();
  ASSERT_TRUE(after.present);
  EXPECT_EQ(after.samples, 5);
  EXPECT_EQ(after.loss, after.mse);
  EXPECT_TRUE(after.dice.empty());
  EXPECT_GT(after.mae, 0.0);
  // Targets are uniform in [-1, 1]: the input's channel means give them away.
  EXPECT_LT(after.mse, 0.5 * before.mse) << "validation MSE before training " << before.mse;
}

}  // namespace
}  // namespace hybrid3d::test
