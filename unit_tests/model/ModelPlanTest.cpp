// The model plan (what a dry run prints) against the model itself: on every grid, even and
// uneven, each rank's predicted memory equals what its finalized graph holds (Graph::memory(),
// workspace included), float and double, CosmoFlow, U-Net and MLPerf CosmoFlow; the shapes and
// parameter counts are the graph's (global, and each rank's part); the gradient reduction moves the
// bytes the plan predicts, the first dense layer's weight summed only over its own columns; a grid
// the model refuses is refused by the plan with the same message; and a 512^3 plan is made without
// allocating what it predicts.
#include <sys/resource.h>

#include <string>

#include <gtest/gtest.h>

#include <hybrid3d/comm/GradientReducer.hpp>
#include <hybrid3d/engines/impl/HostWorkspace.hpp>
#include <hybrid3d/model/ModelPlan.hpp>

#include "ErrorOf.hpp"
#include "GridCases.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

// Even and uneven grids of 1, 2, 3 and 8 ranks, one with two data-parallel groups.
std::vector<GridCase> planGridCases() {
  return {{{1, 1, 1}, 1}, {{2, 1, 1}, 1}, {{1, 1, 2}, 2}, {{3, 1, 1}, 1}, {{2, 2, 2}, 1}};
}

ModelOptions options(const std::string& architecture, int width, int batch) {
  ModelOptions o;
  o.architecture = architecture;
  o.inputWidth = width;
  o.batch = batch;
  return o;
}

std::string describe(const GraphMemory& m) {
  return "activations " + std::to_string(m.activations) + ", gradients " +
         std::to_string(m.activationGradients) + ", parameters " + std::to_string(m.parameters) +
         ", workspace " + std::to_string(m.workspace);
}

// Recomputation's view of the layers is one rule in the plan (by kind) and in the graph (by
// Node::startsSegment): the same names, inputs, segment starts and resolved segments.
template <class T>
void expectSameStepGraph(const ModelPlan& plan, const Graph<T, TestDevice>& g) {
  const StepGraph p = plan.stepGraph(), q = g.stepGraph();
  EXPECT_EQ(p.names, q.names);
  EXPECT_EQ(p.inputs, q.inputs);
  EXPECT_EQ(p.startsSegment, q.startsSegment);
  EXPECT_TRUE(plan.recomputeSegments() == g.recomputeSegments());
}

// Builds the model on `grid` in a process whose convolution workspace starts empty, and checks
// this rank's prediction, the layers' shapes and the parameter count against it.
template <class T>
void expectPlanMatchesModel(const ProcessGrid& grid, const ModelOptions& o) {
  SCOPED_TRACE(o.architecture + " " + std::to_string(o.inputWidth) + "^3, " +
               (sizeof(T) == 4 ? "float" : "double"));
  Impl::HostWorkspace::instance().release();
  std::string planError, modelError;
  ModelPlan plan;
  planError = errorOf([&] { plan = planModel(o, grid.dims()); });
  GraphMemory predicted;
  if (planError.empty())
    planError = errorOf([&] { predicted = predictMemory<T, TestDevice>(plan, grid.coords()); });
  Model<T, TestDevice> model;
  modelError = errorOf([&] { model = buildModel<T, TestDevice>(grid, o); });
  ASSERT_EQ(planError, modelError) << "the plan and the model disagree on whether this grid fits";
  if (!modelError.empty()) return;

  const GraphMemory actual = model.graph->memory();
  EXPECT_EQ(predicted.activations, actual.activations);
  EXPECT_EQ(predicted.activationBuffers, actual.activationBuffers);
  // The activation gradients' arena, placed by their lives, and the gradients on their own.
  EXPECT_EQ(predicted.activationGradients, actual.activationGradients);
  EXPECT_EQ(predicted.activationGradientBuffers, actual.activationGradientBuffers);
  EXPECT_EQ(predicted.parameters, actual.parameters);
  EXPECT_EQ(predicted.workspace, actual.workspace);
  EXPECT_EQ(predicted.total(), actual.total())
      << "rank " << grid.worldRank() << ": predicted " << describe(predicted) << "; graph "
      << describe(actual);

  auto& g = *model.graph;
  expectSameStepGraph(plan, g);
  ASSERT_EQ(plan.layers.size(), g.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(plan.layers[i].name, g.node(i).name());
    EXPECT_TRUE(plan.layers[i].output == g.node(i).outputShape()) << plan.layers[i].name;
    EXPECT_EQ(plan.layers[i].volume, g.node(i).producesVolume()) << plan.layers[i].name;
    EXPECT_TRUE(plan.layers[i].inputGhosts.at(0) == g.node(i).inputGhosts(0))
        << plan.layers[i].name;
  }
  // Global counts (PyTorch's), and what this rank holds of each layer (a column shard: its part).
  Index parameters = 0;
  for (const auto& p : g.parameters()) parameters += globalSize(p.param.shape);
  EXPECT_EQ(plan.parameterCount(), parameters);
  for (std::size_t i = 0; i < g.size(); ++i) {
    Index local = 0;
    for (const auto& p : g.node(i).parameters()) local += Index(p.value.size());
    EXPECT_EQ(plan.localParameters(int(i), grid.coords()), local) << plan.layers[i].name;
  }
  // What the gradient reduction moves per step, as the reducer counts it and the plan predicts
  // it. The first dense layer's column shard leaves the world sum: what every rank saves
  // against reducing every parameter over the world is the whole weight, less its own columns
  // when they are summed over two or more data-parallel groups.
  const GradientReducer<T, TestDevice> reducer(grid.worldComm(), grid.dataComm(),
                                               g.gradientsByNode());
  const int G = grid.numGroups(), ranks = G * grid.spatialSize();
  EXPECT_EQ(reducer.bytesPerStep(), predictAllreduceBytes<T>(plan, grid.coords(), G));
  std::size_t saved = 0;
  for (const auto& p : g.parameters())
    if (p.param.layout.columnShard)
      saved += sizeof(T) *
               std::size_t(globalSize(p.param.shape) - (G > 1 ? Index(p.param.value.size()) : 0));
  const std::size_t expected = ranks > 1 ? sizeof(T) * std::size_t(parameters) - saved : 0;
  EXPECT_EQ(reducer.bytesPerStep(), expected);  // nothing to sum on one rank
}

// Float on every grid, double on grids of at most `doubleRanks` ranks (U-Net's 19 M
// parameters, allocated and initialised per rank, make it the slow one).
void expectPlansMatch(const ModelOptions& o, int doubleRanks) {
  forEachGrid(planGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    expectPlanMatchesModel<float>(grid, o);
    if (grid.spatialSize() * grid.numGroups() <= doubleRanks)
      expectPlanMatchesModel<double>(grid, o);
  });
  Impl::HostWorkspace::instance().release();
}

TEST(ModelPlan, CosmoFlowMemoryEqualsTheFinalizedGraphs) {
  expectPlansMatch(options("cosmoflow", 16, 2), 8);
}
TEST(ModelPlan, UNetMemoryEqualsTheFinalizedGraphs) {
  expectPlansMatch(options("unet3d", 16, 1), 3);
}
TEST(ModelPlan, MlperfCosmoFlowMemoryEqualsTheFinalizedGraphs) {
  expectPlansMatch(options("cosmoflow_mlperf", 32, 1), 1);
}

// With recomputation (model/Recompute.hpp) the activations share one arena placed by their lives
// over the step's order of work: planned as allocated, with `all` and with ranges, float only
// (the placement does not depend on the scalar beyond its size).
TEST(ModelPlan, RecomputedMemoryEqualsTheFinalizedGraphs) {
  forEachGrid(planGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    ModelOptions o = options("cosmoflow", 16, 2);
    for (const char* setting : {"all", "conv1..pool2, fc1..drop3"}) {
      o.recompute = parseRecompute(setting);
      expectPlanMatchesModel<float>(grid, o);
    }
    // The U-Net (batch norm, skip connections) once: on 2x1x1 at 2 ranks.
    if (worldSize() != 2 || grid.spatialSize() != 2) return;
    o = options("unet3d", 16, 1);
    for (const char* setting : {"all", "enc1_conv2..pool1, dec1_bn1"}) {
      o.recompute = parseRecompute(setting);
      expectPlanMatchesModel<float>(grid, o);
    }
  });
  Impl::HostWorkspace::instance().release();
}

// A grid too fine for a layer: U-Net 16^3 on 4x1x1 halves D to 4 voxels on 4 ranks before the
// last pool, whose second output reads inputs 2..3, two ranks away. (On 3x1x1 the bottom's
// 2 voxels leave rank 2 without input, but its up-sampled voxel reads rank 1: planned.)
// Checked without MPI: the plan needs no communicator.
TEST(ModelPlan, RefusesAGridTooFineWithTheLayersMessage) {
  EXPECT_NO_THROW(planModel(options("unet3d", 16, 1), {3, 1, 1}));
  const std::string e = errorOf([] { planModel(options("unet3d", 16, 1), {4, 1, 1}); });
  EXPECT_NE(e.find("reaches past the neighbouring rank"), std::string::npos) << e;
  EXPECT_NE(e.find("grid 4x1x1"), std::string::npos) << e;
  EXPECT_NE(errorOf([] {
              planModel(options("cosmoflow", 24, 1), {1, 1, 1});
            }).find("cosmoflow needs an input width that is a power of two >= 16 (got 24)"),
            std::string::npos);
}

// Layer grids: on staged layouts of even and uneven grids (sub-grids without samples, ranks in
// no sub-grid, a redistribution both ways), each rank's predicted memory -- redistribution
// buffers and the activation gradients' arena included -- equals what its finalized graph
// holds, its samples in each layer are the graph's, and the redistributions sit where the graph
// has them.
void expectStagedPlanMatchesModel(const ProcessGrid& grid, ModelOptions o, const std::string& rule,
                                  int minimumBoxWidth) {
  SCOPED_TRACE(o.architecture + " " + rule + " K=" + std::to_string(minimumBoxWidth));
  Impl::HostWorkspace::instance().release();
  o.layerGrids.entries = parseLayerGridEntries(rule);
  o.layerGrids.minimumBoxWidth = minimumBoxWidth;
  const ModelPlan plan = planModel(o, grid.dims());
  EXPECT_TRUE(plan.staged());
  const GraphMemory predicted = predictMemory<float, TestDevice>(plan, grid.coords());
  Model<float, TestDevice> model = buildModel<float, TestDevice>(grid, o);
  const GraphMemory actual = model.graph->memory();
  EXPECT_EQ(predicted.total(), actual.total())
      << "rank " << grid.worldRank() << ": predicted " << describe(predicted) << ", buffers "
      << predicted.buffers << "; graph " << describe(actual) << ", buffers " << actual.buffers;
  EXPECT_EQ(predicted.buffers, actual.buffers);
  EXPECT_EQ(predicted.activationGradients, actual.activationGradients);
  EXPECT_EQ(predicted.activationGradientBuffers, actual.activationGradientBuffers);
  auto& g = *model.graph;
  expectSameStepGraph(plan, g);
  EXPECT_EQ(predicted.activations, actual.activations);
  ASSERT_EQ(plan.layers.size(), g.size());
  int redistributions = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(plan.layers[i].name, g.node(i).name());
    EXPECT_EQ(plan.localBatch(int(i), grid.coords()), g.node(i).outputShape().batch)
        << plan.layers[i].name;
    EXPECT_EQ(plan.layers[i].kind == "Redistribute", g.node(i).movesBetweenGrids())
        << plan.layers[i].name;
    EXPECT_EQ(plan.layers[i].grid, g.grid(int(i)).dims()) << plan.layers[i].name;
    redistributions += g.node(i).movesBetweenGrids();
  }
  EXPECT_GT(redistributions, 0);
  const GradientReducer<float, TestDevice> reducer(grid.worldComm(), grid.dataComm(),
                                                   g.gradientsByNode());
  EXPECT_EQ(reducer.bytesPerStep(),
            predictAllreduceBytes<float>(plan, grid.coords(), grid.numGroups()));
}

TEST(ModelPlan, StagedMemoryEqualsTheFinalizedGraphs) {
  forEachGrid(
      {{{2, 1, 1}, 1}, {{3, 1, 1}, 1}, {{2, 2, 1}, 2}, {{2, 2, 2}, 1}},
      [&](const ProcessGrid& grid, const GridCase&) {
        expectStagedPlanMatchesModel(grid, options("cosmoflow", 16, 3), "conv3..fc3=1x1x1", 0);
        expectStagedPlanMatchesModel(grid, options("cosmoflow", 32, 2),
                                     "conv2..pool2=2x1x1, fc2..fc3=1x1x1", 0);
        expectStagedPlanMatchesModel(grid, options("cosmoflow_mlperf", 32, 2), "", 8);
        if (grid.spatialSize() > 2)
          expectStagedPlanMatchesModel(grid, options("unet3d", 16, 1), "pool3..up3=1x1x1", 0);
        // Recomputation on a layer grid: the redistributions are nodes of the segments too.
        ModelOptions r = options("cosmoflow", 16, 3);
        r.recompute = parseRecompute("all");
        expectStagedPlanMatchesModel(grid, r, "conv3..fc3=1x1x1", 0);
      });
  Impl::HostWorkspace::instance().release();
}

long peakRssKiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// CosmoFlow 512^3 on one rank holds tens of GiB; planning it must not allocate them.
TEST(ModelPlan, PlansCosmoFlow512WithoutAllocating) {
  const long before = peakRssKiB();
  const ModelPlan plan = planModel(options("cosmoflow", 512, 1), {1, 1, 1});
  const GraphMemory m = predictMemory<float>(plan, {0, 0, 0});
  const long grown = peakRssKiB() - before;
  // conv1's output alone: 16 channels x 512^3 floats, ghosted for the pool (1 voxel a side).
  EXPECT_GT(m.activations, std::size_t(16) * 514 * 514 * 514 * 4);
  EXPECT_LT(grown, 256 * 1024) << "planning grew the peak RSS by " << grown << " KiB";
  EXPECT_EQ(plan.layers.front().output.extents, (Index3{512, 512, 512}));
  // conv1's output, 16 x 512^3 = 2^31 values, is beyond the vendor engines' 32-bit indexing:
  // auto plans the kokkos engine there, and oneDNN is not asked about it (no workspace).
  EXPECT_GT(plan.convLargestOperand(0, {0, 0, 0}), vendorConvMaxElements);
  EXPECT_EQ(predictLayerMemory<float>(plan, {0, 0, 0}).front().workspace, 0u);
#if HYBRID3D_ENABLE_ONEDNN
  // On two ranks each half fits, and oneDNN is asked for conv1's workspace.
  const ModelPlan halves = planModel(options("cosmoflow", 512, 1), {2, 1, 1});
  EXPECT_LE(halves.convLargestOperand(0, {0, 0, 0}), vendorConvMaxElements);
  EXPECT_GT(predictLayerMemory<float>(halves, {0, 0, 0}).front().workspace, std::size_t(1) << 29)
      << "conv1's onednn workspace, asked of oneDNN";
#endif
}

// The lower bound a dry run refuses by before it plans the engines: everything but the
// workspaces, asked of no engine; a CosmoFlow 2048^3 plan on one rank (2^33 voxels, which
// oneDNN's AVX-512 kernels cannot index) is made this way without reaching oneDNN.
TEST(ModelPlan, MemoryBeforeEnginesIsThePlanLessTheWorkspace) {
  const ModelPlan plan = planModel(options("cosmoflow", 64, 2), {2, 1, 1});
  const GraphMemory all = predictMemory<float>(plan, {0, 0, 0});
  const GraphMemory before = predictMemoryBeforeEngines<float>(plan, {0, 0, 0});
  EXPECT_EQ(before.workspace, 0u);
  EXPECT_EQ(before.total() + all.workspace, all.total());
  const ModelPlan huge = planModel(options("cosmoflow", 2048, 1), {1, 1, 1});
  const GraphMemory hugeBefore = predictMemoryBeforeEngines<float>(huge, {0, 0, 0});
  EXPECT_GT(hugeBefore.activations, std::size_t(16) * 2048 * 2048 * 2048 * 4);
}

}  // namespace
}  // namespace hybrid3d::test
