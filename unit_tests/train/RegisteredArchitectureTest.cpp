// The trainer knows no architecture or loss by name: an architecture registered in this file
// alone (as one new file under src/model/architectures/ would be) trains through the ordinary
// Trainer path, its regression task loading the targets and reporting the validation metrics.

#include <gtest/gtest.h>

#include <hybrid3d/model/Tasks.hpp>
#include <hybrid3d/train/Trainer.hpp>

#include "GridCases.hpp"
#include "TrainingSamples.hpp"

namespace hybrid3d::test {
namespace {

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

TEST(RegisteredArchitecture, TrainsAndValidatesThroughTheTrainer) {
  ASSERT_TRUE(tinyRegistered);
  TrainConfig c;
  c.model.architecture = "tiny_regressor";
  c.model.inputWidth = S;
  c.model.seed = 4;
  c.data.trainFiles =
      writeLevelSamples(scratchDirectory("registered_architecture", "train"), 16, S, 1);
  c.data.train = "unused";
  c.data.validation = scratchDirectory("registered_architecture", "validation");
  writeLevelSamples(c.data.validation, 5, S, 2);
  c.globalBatch = 4;
  c.validationBatch = 3;  // a short last batch: padded slots count nothing
  c.epochs = 100;
  c.optimizer = "adam";
  c.schedule.baseRate = 1e-2;
  c.outputDir = scratchDirectory("registered_architecture", "run");
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
