// The architecture registry: an architecture registered in this file alone (as one new file
// under src/model/architectures/ would be) is listed with the built-in ones, planned and built
// from the same definition, and trained for its task (here segmentation: its loss and its
// validation metrics agree); unknown and taken names are refused naming the registered ones.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/model/ModelPlan.hpp>
#include <hybrid3d/model/Models.hpp>
#include <hybrid3d/model/Tasks.hpp>

#include "ErrorOf.hpp"
#include "GridCases.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

// A two-class segmenter: a 3^3 convolution, ReLU and a 1^3 head with bias.
ModelTraits tinyTraits(const ModelOptions& o) {
  if (o.inputWidth % 2 != 0)
    fail("model: tiny_segmenter needs an even input width (got ", o.inputWidth, ")");
  ModelTraits t;
  t.inputChannels = 1;
  t.outputs = 2;
  t.task = &segmentationTask();
  return t;
}

void tinyDefine(GraphBuilder& b, const ModelOptions&) {
  int x = b.conv("conv1", GraphBuilder::Input, 4, 3, 1, 1, false);
  x = b.leaky("relu1", x, 0.0);
  b.conv("head", x, 2, 1, 1, 0, true);
}

std::optional<ParameterInit> tinyInitialization(const std::string&, const std::string& parameter,
                                                std::size_t dims) {
  if (parameter == "weight" && dims == 5) return ParameterInit{Init::HeNormal};
  if (parameter == "bias") return ParameterInit{Init::Constant, 0.25};
  return std::nullopt;
}

const bool tinyRegistered =
    (registerArchitecture({"tiny_segmenter", tinyTraits, tinyDefine, tinyInitialization}), true);

ModelOptions tinyOptions() {
  ModelOptions o;
  o.architecture = "tiny_segmenter";
  o.inputWidth = 8;
  o.batch = 2;
  o.seed = 5;
  return o;
}

TEST(ArchitectureRegistry, ListsTheBuiltInArchitecturesAndTheOneRegisteredHere) {
  ASSERT_TRUE(tinyRegistered);
  const std::vector<std::string> expected = {"cosmoflow", "cosmoflow_mlperf", "tiny_segmenter",
                                             "unet3d"};
  EXPECT_EQ(architectureNames(), expected);
  for (const std::string& name : expected) EXPECT_EQ(findArchitecture(name).name, name);
}

TEST(ArchitectureRegistry, RefusesUnknownAndTakenNamesAndItsOwnOptions) {
  ModelOptions o = tinyOptions();
  o.architecture = "resnet";
  EXPECT_EQ(errorOf([&] { modelTraits(o); }),
            "model: unknown architecture \"resnet\" (cosmoflow, cosmoflow_mlperf, tiny_segmenter "
            "or unet3d)");
  EXPECT_EQ(errorOf([&] { planModel(o, {1, 1, 1}); }), errorOf([&] { modelTraits(o); }));
  EXPECT_EQ(errorOf([] { registerArchitecture(findArchitecture("unet3d")); }),
            "model: architecture \"unet3d\" is registered twice");
  EXPECT_EQ(errorOf([] {
              registerArchitecture({"no_graph", tinyTraits, nullptr, tinyInitialization});
            }),
            "model: architecture \"no_graph\" needs a name, traits, define and initialization");
  EXPECT_EQ(architectureNames().size(), 4u);
  o = tinyOptions();
  o.inputWidth = 7;
  EXPECT_EQ(errorOf([&] { modelTraits(o); }),
            "model: tiny_segmenter needs an even input width (got 7)");
}

TEST(ArchitectureRegistry, ARegisteredArchitectureIsPlannedAndBuiltFromOneDefinition) {
  const ProcessGrid grid(MPI_COMM_WORLD, {worldSize(), 1, 1});
  const ModelOptions o = tinyOptions();
  const ModelPlan plan = planModel(o, grid.dims());
  Model<double, TestDevice> m = buildModel<double, TestDevice>(grid, o);
  auto& g = *m.graph;
  EXPECT_EQ(m.architecture, "tiny_segmenter");
  EXPECT_EQ(m.inputChannels, 1);
  EXPECT_EQ(m.outputs, 2);
  ASSERT_EQ(plan.layers.size(), g.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(plan.layers[i].name, g.node(i).name());
    EXPECT_EQ(plan.layers[i].output, g.node(i).outputShape()) << plan.layers[i].name;
  }
  EXPECT_EQ(plan.parameterCount(), Index(4 * 27 + 2 * 4 + 2));
  // The architecture's own initialisation: its head's bias is 0.25.
  for (const auto& p : g.parameters())
    if (p.layer == "head" && p.param.name == "bias") {
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.param.value);
      EXPECT_EQ(h(0), 0.25);
      EXPECT_EQ(h(1), 0.25);
    }
}

// Its task is the segmentation task: the loss through the task and the cross-entropy its
// validation metrics sum are the same mean over every voxel; one padded slot counts nothing.
TEST(ArchitectureRegistry, ARegisteredArchitectureIsTrainedForItsTask) {
  const ProcessGrid grid(MPI_COMM_WORLD, {worldSize(), 1, 1});
  Model<double, TestDevice> m = buildModel<double, TestDevice>(grid, tinyOptions());
  auto& g = *m.graph;
  Kokkos::deep_copy(g.input().volume.view(), 0.5);
  const Index owned = g.input().volume.owned().size();
  std::vector<int> labels(2 * std::size_t(owned));
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = int(i % 3 == 0);
  TestExecSpace exec;
  m.task->load(exec, {nullptr, 0, labels.data(), std::size_t(owned)}, 0, 2);
  g.setTraining(false);
  g.forward(exec);
  const double loss = m.task->loss(exec, g, false);
  EXPECT_TRUE(std::isfinite(loss) && loss > 0) << loss;

  m.task->clearMetrics();
  m.task->addMetrics(exec, g, 2);
  EvalSummary s;
  m.task->summarize(grid, s);
  EXPECT_NEAR(s.loss, loss, 1e-12 * loss);
  ASSERT_EQ(s.dice.size(), 2u);
  EXPECT_GE(s.accuracy, 0.0);
  EXPECT_LE(s.accuracy, 1.0);

  // Slot 1 as padding: with the same input and labels in both slots, slot 0 alone must give
  // the means of both; a padded slot that counted would change them.
  std::vector<int> same(2 * std::size_t(owned));
  for (std::size_t i = 0; i < same.size(); ++i) same[i] = int((i % std::size_t(owned)) % 3 == 0);
  m.task->load(exec, {nullptr, 0, same.data(), std::size_t(owned)}, 0, 2);
  m.task->clearMetrics();
  m.task->addMetrics(exec, g, 2);
  EvalSummary both;
  m.task->summarize(grid, both);
  m.task->load(exec, {nullptr, 0, same.data(), std::size_t(owned)}, 0, 1);
  m.task->clearMetrics();
  m.task->addMetrics(exec, g, 1);
  EvalSummary first;
  m.task->summarize(grid, first);
  EXPECT_NEAR(first.loss, both.loss, 1e-12 * both.loss);
  EXPECT_EQ(first.accuracy, both.accuracy);
  EXPECT_EQ(first.dice, both.dice);
}

}  // namespace
}  // namespace hybrid3d::test
