// The performance model's counts against a real step: on every grid of the standard cases that
// fits the world (uneven, one or two groups), for CosmoFlow and the U-Net, the bytes each rank
// sends in halo exchanges and hands to the gradient reduction in one training step equal what
// countStep predicts for that rank, to the byte. And the Machine-based prediction behaves as
// its model says: calibrated timings replace peak rates, a second group adds reduction time,
// prefetch hides reading.
#include <gtest/gtest.h>

#include <hybrid3d/core/PhaseTimers.hpp>
#include <hybrid3d/model/LayerGridRule.hpp>
#include <hybrid3d/data/Subvolume.hpp>
#include <hybrid3d/plan/LayoutSearch.hpp>
#include <hybrid3d/plan/RecomputeChoice.hpp>
#include <hybrid3d/plan/StepCost.hpp>
#include <hybrid3d/train/Trainer.hpp>

#include "GridCases.hpp"
#include "TrainingSamples.hpp"

namespace hybrid3d::test {
namespace {

constexpr int S = 16;

TrainConfig smallConfig(const std::string& architecture, const std::vector<std::string>& files,
                        int groups, const std::string& dir) {
  TrainConfig c;
  c.model.architecture = architecture;
  c.model.inputWidth = S;
  c.data.trainFiles = files;
  c.data.train = "unused";
  c.globalBatch = 2 * groups;
  c.epochs = 100;
  c.optimizer = "adam";
  c.outputDir = dir;
  c.printEvery = 1000000;
  c.checkpointMinutes = 0;
  return c;
}

// A layout and the model's layer grids on it (Parallel/layer grids, Parallel/minimum box width).
struct Case {
  GridCase grid;
  std::string layerGrids;
  int minimumBoxWidth = 0;
};

// Each grid once over the registrations at 1, 2, 4 and 8 ranks: at the smallest world that
// holds it (a larger one would count the same bytes again while its other ranks wait, spinning
// on the oversubscribed cores: the U-Net's 14 grids took 82 s at 8 ranks).
std::vector<Case> unstagedAtTheirOwnRankCount(const std::vector<GridCase>& grids) {
  std::vector<Case> cases;
  for (const GridCase& g : grids) {
    const int ranks = g.spatial[0] * g.spatial[1] * g.spatial[2] * g.groups;
    if (ranks <= worldSize() && 2 * ranks > worldSize()) cases.push_back({g, "", 0});
  }
  return cases;
}

// On every rank of every case: the bytes one real training step hands to halo exchanges,
// gradient reductions and redistributions equal countStep's for that rank.
void expectCountedBytes(const std::string& architecture, const std::vector<Case>& cases) {
  const std::string dir = scratchDirectory("step_cost_test", architecture);
  const auto files = writeNoiseSamples(dir, architecture == "unet3d", 8, S);
  int ran = 0;
  for (const Case& k : cases) {
    ran += forEachGrid({k.grid}, [&](const ProcessGrid& grid, const GridCase& g) {
      SCOPED_TRACE("layer grids '" + k.layerGrids + "', K " + std::to_string(k.minimumBoxWidth));
      TrainConfig c = smallConfig(architecture, files, g.groups, dir);
      c.model.layerGrids.entries = parseLayerGridEntries(k.layerGrids);
      c.model.layerGrids.minimumBoxWidth = k.minimumBoxWidth;
      Trainer<float> trainer(grid, c);
      trainer.step();  // the first step zeroes the padding once; count a later one
      PhaseTimers::global().reset();
      trainer.step();
      const RunPlan plan =
          planRun<float>(c, grid.dims(), grid.numGroups(), {"files", Index(files.size())}, {});
      const bool staged = !k.layerGrids.empty() || k.minimumBoxWidth > 0;
      EXPECT_EQ(plan.model.staged(), staged);
      const StepCost counted = countStep(plan, grid.coords());
      const PhaseTimers& real = PhaseTimers::global();
      EXPECT_EQ(real.haloBytes, counted.haloBytes) << "rank " << worldRank();
      EXPECT_EQ(real.allreduceBytes, counted.allreduceBytes) << "rank " << worldRank();
      EXPECT_EQ(real.redistributeBytes, counted.redistributeBytes) << "rank " << worldRank();
      // A staged layout moves something somewhere (not necessarily from every rank).
      unsigned long long moved = counted.redistributeBytes;
      MPI_Allreduce(MPI_IN_PLACE, &moved, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, grid.worldComm());
      EXPECT_EQ(moved > 0, staged);
    });
  }
  EXPECT_GT(ran, 0);
}

TEST(StepCost, CosmoFlowHaloAndReductionBytesAreExact) {
  expectCountedBytes("cosmoflow", unstagedAtTheirOwnRankCount(standardGridCases()));
}
TEST(StepCost, UNetHaloAndReductionBytesAreExact) {
  expectCountedBytes("unet3d", unstagedAtTheirOwnRankCount(standardGridCases()));
}

// S = 16: conv1 16^3, conv2 8^3, conv3 4^3, conv4 (stride 2) on 2^3, the rest 1^3.
TEST(StepCost, CosmoFlowBytesAreExactOnLayerGrids) {
  if (worldSize() < 2)
    GTEST_SKIP() << "a layer grid differs from the spatial grid on 2 ranks or more";
  expectCountedBytes("cosmoflow",
                     {
                         // The deep part on one rank per sample: 2 sub-grids of 1x1x1.
                         {{{2, 1, 1}, 1}, "conv2..fc3=1x1x1", 0},
                         // The automatic rule: 4x1x1, 2x1x1 from conv2, 1x1x1 from conv3.
                         {{{4, 1, 1}, 1}, "", 4},
                         // Uneven (8 = 3 + 3 + 2) with a shadow rank, then one rank per sample
                         // and two sub-grids without one.
                         {{{4, 1, 1}, 1}, "conv2..act3=3x1x1, pool3..fc3=1x1x1", 0},
                         // Two groups; then the dense part moved again (features, not volumes).
                         {{{2, 2, 1}, 2}, "conv3..fc1=1x1x1, fc2..fc3=2x1x1", 0},
                     });
}

TEST(StepCost, UNetBytesAreExactOnLayerGrids) {
  if (worldSize() < 2)
    GTEST_SKIP() << "a layer grid differs from the spatial grid on 2 ranks or more";
  expectCountedBytes("unet3d", {
                                   // The bottom coarse, the decoder back on the fine grid.
                                   {{{2, 2, 1}, 1}, "pool3..up3=1x1x1", 0},
                                   {{{2, 2, 2}, 1}, "pool3..up3=1x1x1", 0},
                                   // Every layer on 1x1x1 sub-grids: the input and the labels
                                   // moved to them.
                                   {{{2, 1, 1}, 1}, "", 16},
                               });
}

Machine someMachine() {
  Machine m;
  m.name = "test";
  m.rank = {1000, 500, 0.5, 100, 0.8, 10, 16};
  m.network.ranksPerNode = 4;
  m.network.intraLatencyUs = 2;
  m.network.intraGBs = 50;
  m.network.interLatencyUs = 5;
  m.network.interGBs = 25;
  m.fileSystem = {2, 100};
  return m;
}

TrainConfig cosmoflow(int batch, int width) {
  TrainConfig c;
  c.model.architecture = "cosmoflow";
  c.model.inputWidth = width;
  c.globalBatch = batch;
  return c;
}

TEST(StepCost, ACalibratedTimingReplacesThePeakEstimate) {
  const RunPlan run = planRun<float>(cosmoflow(2, 32), {1, 1, 1}, 1, {"x", 16}, {});
  Machine m = someMachine();
  const StepCost peak = predictStep(run, m, {0, 0, 0});
  const LayerCost& conv2 = peak.layers.at(3);
  ASSERT_EQ(conv2.name, "conv2");
  EXPECT_FALSE(conv2.calibrated);
  // Measured: 2 s at half the layer's work and 8 s at twice it: per unit of work 4/w and 4/w,
  // so 4 s at its own work (log-linear interpolation of the per-work time).
  m.timings.push_back({conv2.key, {conv2.work / 2, conv2.work * 2}, {2.0, 8.0}});
  const StepCost calibrated = predictStep(run, m, {0, 0, 0});
  EXPECT_TRUE(calibrated.layers.at(3).calibrated);
  EXPECT_NEAR(calibrated.layers.at(3).computeSeconds, 4.0, 1e-9);
  // Outside the measured sizes the nearest one's time per unit of work.
  m.timings.back() = {conv2.key, {conv2.work * 4, conv2.work * 8}, {1.0, 2.0}};
  EXPECT_NEAR(predictStep(run, m, {0, 0, 0}).layers.at(3).computeSeconds, 0.25, 1e-9);
}

TEST(StepCost, GroupsAddReductionAndSpatialRanksAddHalos) {
  const Machine m = someMachine();
  const StepCost one =
      predictStep(planRun<float>(cosmoflow(2, 32), {1, 1, 1}, 1, {"x", 16}, {}), m, {0, 0, 0});
  EXPECT_EQ(one.allreduceBytes, 0u);
  EXPECT_EQ(one.haloBytes, 0u);
  EXPECT_EQ(one.phases.allreduce, 0.0);
  const StepCost groups =
      predictStep(planRun<float>(cosmoflow(2, 32), {1, 1, 1}, 2, {"x", 16}, {}), m, {0, 0, 0});
  EXPECT_EQ(groups.allreduceBytes, 4u * std::size_t(9437636));  // every parameter, float
  EXPECT_GT(groups.allreduceSeconds, 0.0);
  const StepCost spatial =
      predictStep(planRun<float>(cosmoflow(2, 32), {2, 1, 1}, 1, {"x", 16}, {}), m, {0, 0, 0});
  EXPECT_GT(spatial.haloBytes, 0u);
  EXPECT_GT(spatial.phases.halo, 0.0);
  // One group: the first dense layer's columns are not reduced (each lives on one rank).
  const Index fc1Columns = 2048 * 256 * 2 * 2 * 2 / 2;
  EXPECT_EQ(spatial.allreduceBytes, 4u * std::size_t(9437636 - 2 * fc1Columns));
  // Half the volume per rank: about half the compute of the layers before the dense part.
  EXPECT_LT(spatial.phases.compute, 0.75 * one.phases.compute);
}

TEST(StepCost, LayerMemoryAddsUpToTheRanksMemory) {
  for (const Int3& grid : {Int3{1, 1, 1}, Int3{2, 1, 1}, Int3{1, 3, 2}}) {
    const RunPlan run = planRun<float>(cosmoflow(2, 32), grid, 1, {"x", 16}, {});
    const Int3 last{grid[0] - 1, grid[1] - 1, grid[2] - 1};
    const StepCost c = countStep(run, last);
    const GraphMemory whole = predictMemory<float>(run.model, last);
    std::size_t activations = 0, gradients = 0, parameters = 0, workspace = 0;
    for (const LayerCost& l : c.layers) {
      activations += l.memory.activations;
      gradients += l.memory.activationGradients;
      parameters += l.memory.parameters;
      workspace = std::max(workspace, l.memory.workspace);
    }
    // The rest is the model input: 2 samples x 4 channels of the ghosted box, float.
    const data::Subvolume input(BlockDecomposition(run.model.input.extents, grid), last,
                                run.model.outputGhosts(ModelPlan::Input).at(last));
    EXPECT_EQ(whole.activations - activations, std::size_t(2 * 4 * input.local.size() * 4));
    // Each layer's gradients on their own; the rank's arena places them by their lives.
    EXPECT_EQ(gradients, whole.activationGradientBuffers);
    EXPECT_LT(whole.activationGradients, whole.activationGradientBuffers);
    EXPECT_EQ(parameters, whole.parameters);
    EXPECT_EQ((workspace + 4095) / 4096 * 4096, whole.workspace);
  }
}

TEST(StepCost, PrefetchHidesReadingBehindTheStep) {
  Machine m = someMachine();
  m.fileSystem = {1e-3, 1e-3};  // 1 MB/s: reading dominates
  TrainConfig c = cosmoflow(2, 32);
  c.data.prefetch = true;
  const StepCost hidden = predictStep(planRun<float>(c, {1, 1, 1}, 1, {"x", 16}, {}), m, {0, 0, 0});
  EXPECT_NEAR(
      hidden.phases.io,
      hidden.ioSeconds - (hidden.phases.compute + hidden.phases.halo + hidden.phases.allreduce),
      1e-12);
  c.data.prefetch = false;
  const StepCost exposed =
      predictStep(planRun<float>(c, {1, 1, 1}, 1, {"x", 16}, {}), m, {0, 0, 0});
  EXPECT_EQ(exposed.phases.io, exposed.ioSeconds);
  // 2 samples x 4 channels x 32^3 int16 voxels, and 4 float targets each.
  EXPECT_EQ(exposed.ioBytes, std::size_t(2 * (4 * 32 * 32 * 32 * 2 + 4 * 4)));
}

TEST(StepCost, RedistributionsAreAPhaseOfTheirOwnAndIdleRanksComputeNothing) {
  // 32^3 on 4x1x1, boxes at least 8 wide: conv2 on 2x1x1, conv3 on from 1x1x1, 2 samples:
  // sub-grids 2 and 3 (ranks 2 and 3) hold none from conv3 on.
  TrainConfig c = cosmoflow(2, 32);
  c.model.layerGrids.minimumBoxWidth = 8;
  const RunPlan run = planRun<float>(c, {4, 1, 1}, 1, {"x", 16}, {});
  ASSERT_TRUE(run.model.staged());
  const Machine m = someMachine();
  const StepCost first = predictStep(run, m, {0, 0, 0}), idle = predictStep(run, m, {3, 0, 0});
  EXPECT_GT(first.redistributeBytes, 0u);
  EXPECT_GT(first.phases.redistribute, 0.0);
  const PhaseSeconds& p = first.phases;
  EXPECT_EQ(p.step(), p.compute + p.halo + p.allreduce + p.io + p.redistribute);
  int redistributions = 0;
  for (std::size_t id = 0; id < run.model.layers.size(); ++id) {
    const LayerPlan& l = run.model.layers[id];
    if (l.kind == "Redistribute") {
      ++redistributions;
      EXPECT_GT(first.layers[id].redistributeSeconds, 0.0) << l.name;
      continue;
    }
    if (l.grid != Int3{1, 1, 1} || l.kind == "BatchNorm3d") continue;
    EXPECT_EQ(idle.layers[id].localBatch, 0) << l.name;
    EXPECT_EQ(idle.layers[id].flops, 0.0) << l.name;
    EXPECT_EQ(idle.layers[id].computeSeconds, 0.0) << l.name;
    EXPECT_EQ(idle.layers[id].gather.bytes + idle.layers[id].scatter.bytes, 0u) << l.name;
    EXPECT_EQ(first.layers[id].localBatch, 1) << l.name;
  }
  EXPECT_EQ(redistributions, 2);  // pool1 -> conv2 and pool2 -> conv3
}

// The same plan in bfloat16 and in float: what carries activations (halo exchanges, the
// redistributions, the memory-bound traffic, activation memory) takes half the bytes, what stays
// float (the gradient reduction, parameters) the same; a convolution computes at the machine's
// bfloat16 rate, and its key names the precision.
TEST(StepCost, BFloat16HalvesTheActivationBytesAndKeepsTheReductionsFloat) {
  TrainConfig c = cosmoflow(4, 32);
  c.model.layerGrids.minimumBoxWidth = 8;  // staged: redistributions too
  for (const auto& [grid, groups] :
       {std::pair<Int3, int>{{2, 1, 1}, 2}, std::pair<Int3, int>{{4, 1, 1}, 1}}) {
    const RunPlan f = planRunIn(Precision::Float, c, grid, groups, {"x", 16}, {});
    const RunPlan b = planRunIn(Precision::BFloat16, c, grid, groups, {"x", 16}, {});
    EXPECT_EQ(b.precision, Precision::BFloat16);
    const StepCost cf = countStep(f, {0, 0, 0}), cb = countStep(b, {0, 0, 0});
    SCOPED_TRACE(toString(grid) + " x " + std::to_string(groups));
    EXPECT_GT(cf.haloBytes, 0u);
    EXPECT_EQ(2 * cb.haloBytes, cf.haloBytes);
    EXPECT_EQ(2 * cb.redistributeBytes, cf.redistributeBytes);
    EXPECT_EQ(cb.allreduceBytes, cf.allreduceBytes);
    EXPECT_GT(cf.allreduceBytes, 0u);
    ASSERT_EQ(cb.layers.size(), cf.layers.size());
    for (std::size_t i = 0; i < cf.layers.size(); ++i) {
      const LayerCost &lf = cf.layers[i], &lb = cb.layers[i];
      EXPECT_EQ(2 * lb.gather.bytes, lf.gather.bytes) << lf.name;
      EXPECT_EQ(2 * lb.scatter.bytes, lf.scatter.bytes) << lf.name;
      EXPECT_EQ(2 * lb.forward.bytes, lf.forward.bytes) << lf.name;
      EXPECT_EQ(2 * lb.adjoint.bytes, lf.adjoint.bytes) << lf.name;
      EXPECT_EQ(2 * lb.memory.activations, lf.memory.activations) << lf.name;
      EXPECT_EQ(2 * lb.memory.activationGradients, lf.memory.activationGradients) << lf.name;
      EXPECT_EQ(lb.memory.parameters, lf.memory.parameters) << lf.name;
      EXPECT_EQ(2 * lb.bytes, lf.bytes) << lf.name;
      EXPECT_EQ(lb.flops, lf.flops) << lf.name;
      const std::string suffix = " bfloat16";
      EXPECT_EQ(lb.key.substr(lb.key.size() - suffix.size()), suffix) << lb.key;
    }
    EXPECT_EQ(cb.update.bytes, cf.update.bytes);  // the optimizer on float master weights
  }

  // conv2's time at the peak rates: its FLOPs at 4x the float rate, half its traffic.
  Machine m = someMachine();
  m.rank.bfloat16Gflops = 4 * m.rank.floatGflops;
  const RunPlan f = planRunIn(Precision::Float, cosmoflow(2, 32), {1, 1, 1}, 1, {"x", 16}, {});
  const RunPlan b = planRunIn(Precision::BFloat16, cosmoflow(2, 32), {1, 1, 1}, 1, {"x", 16}, {});
  const StepCost sf = predictStep(f, m, {0, 0, 0}), sb = predictStep(b, m, {0, 0, 0});
  const LayerCost &lf = sf.layers.at(3), &lb = sb.layers.at(3);
  ASSERT_EQ(lb.name, "conv2");
  const double overhead = 1e-6 * m.rank.layerOverheadUs * lf.passes,
               memory = 1e9 * m.rank.memoryGBs * m.rank.memoryEfficiency,
               flopsFloat = lf.computeSeconds - overhead - lf.bytes / memory;
  EXPECT_NEAR(lb.computeSeconds, flopsFloat / 4 + lf.bytes / 2 / memory + overhead,
              1e-12 * lf.computeSeconds);
  // Without a bfloat16 rate in the file: the float rate.
  m.rank.bfloat16Gflops = 0;
  EXPECT_NEAR(predictStep(b, m, {0, 0, 0}).layers.at(3).computeSeconds,
              flopsFloat + lf.bytes / 2 / memory + overhead, 1e-12 * lf.computeSeconds);
}

TrainConfig withRecompute(TrainConfig c, const std::string& option) {
  c.model.recompute = parseRecompute(option);
  return c;
}

// A recomputed layer's forward counted twice (its FLOPs, its forward share of the time), the
// gathers whose ghosts are read again from a recomputed input, and nothing else.
TEST(StepCost, RecomputationCountsTheForwardAgainAndTheHalosOfRecomputedInputs) {
  const Machine m = someMachine();
  const Int3 grid{2, 1, 1};
  const RunPlan none = planRun<float>(cosmoflow(2, 32), grid, 1, {"x", 16}, {});
  const RunPlan all =
      planRun<float>(withRecompute(cosmoflow(2, 32), "all"), grid, 1, {"x", 16}, {});
  const StepCost n = predictStep(none, m, {0, 0, 0}), a = predictStep(all, m, {0, 0, 0});
  const std::vector<bool> recomputed =
      recomputedOutputs(all.model.stepGraph(), allSegments(all.model.stepGraph()));
  EXPECT_FALSE(n.layers.at(0).recomputed);
  double added = 0;
  for (std::size_t id = 0; id < a.layers.size(); ++id) {
    const LayerCost &ln = n.layers[id], &la = a.layers[id];
    SCOPED_TRACE(la.name);
    EXPECT_EQ(la.recomputed, bool(recomputed[id]));
    EXPECT_EQ(la.flops, ln.flops);
    EXPECT_EQ(la.recomputeFlops, la.recomputed ? ln.forwardFlops : 0.0);
    if (la.recomputed)
      EXPECT_NEAR(la.computeSeconds, ln.computeSeconds * (1.0 + 1.0 / ln.passes),
                  1e-12 * ln.computeSeconds);
    else
      EXPECT_EQ(la.computeSeconds, ln.computeSeconds);
    // `all` recomputes each convolution's output and activation: a convolution's input is
    // kept, an activation has no ghosts, a pool's backward reads none: no gather again.
    EXPECT_EQ(la.regather.bytes, 0u);
    EXPECT_EQ(la.haloSeconds, ln.haloSeconds);
    added += la.recomputeSeconds;
  }
  // conv1's output is recomputed (its forward runs again); conv2's input (pool1's output) is
  // kept: its gather is not repeated.
  EXPECT_TRUE(a.layers.at(0).recomputed);
  EXPECT_GT(a.layers.at(0).recomputeFlops, 0.0);
  ASSERT_EQ(a.layers.at(3).name, "conv2");
  EXPECT_GT(a.layers.at(3).gather.bytes, 0u);
  EXPECT_EQ(a.haloBytes, n.haloBytes);
  EXPECT_NEAR(a.phases.compute + a.phases.halo, n.phases.compute + n.phases.halo + added,
              1e-12 * a.phases.compute);
  // One range through a pool into a convolution: only its layers run again; the pool's input
  // (act1's output) and conv2's (pool1's) are recomputed, so the pool's forward and conv2's
  // backward gather again; conv1 reads the kept model input.
  const RunPlan range =
      planRun<float>(withRecompute(cosmoflow(2, 32), "conv1..conv2"), grid, 1, {"x", 16}, {});
  const StepCost r = predictStep(range, m, {0, 0, 0});
  std::size_t again = 0;
  for (std::size_t id = 0; id < r.layers.size(); ++id) {
    const LayerCost& l = r.layers[id];
    SCOPED_TRACE(l.name);
    EXPECT_EQ(l.recomputed, l.name == "conv1" || l.name == "act1" || l.name == "pool1");
    const bool gathers = l.name == "pool1" || l.name == "conv2";
    EXPECT_EQ(l.regather.bytes, gathers ? n.layers[id].gather.bytes : 0u);
    if (gathers) EXPECT_GT(l.regather.bytes, 0u);
    // The gather again is in the layer's halo time and its recomputation's.
    const double regather = l.haloSeconds - n.layers[id].haloSeconds;
    EXPECT_EQ(regather > 0, gathers);
    EXPECT_NEAR(l.recomputeSeconds, regather + (l.computeSeconds - n.layers[id].computeSeconds),
                1e-15);
    again += l.regather.bytes;
  }
  EXPECT_EQ(r.haloBytes, n.haloBytes + again);
}

// `c` on 1 rank (one group, 1x1x1), costed on `m` with a memory limit.
LayoutChoice costed(const TrainConfig& c, const Machine& m, double limit) {
  return costLayout<float>(c, parseLayout("1:1x1x1"), m, limit, {"x", 16}, {});
}

TEST(RecomputeChoice, FitsTheLimitAtTheLeastTimeOfTheSetsItTried) {
  const Machine m = someMachine();
  const TrainConfig c = cosmoflow(2, 32);
  const LayoutChoice none = costed(c, m, 0), all = costed(withRecompute(c, "all"), m, 0);
  ASSERT_LT(all.memoryBytes, none.memoryBytes);
  // Between the two: recomputation must be chosen, and suffices.
  const double limit = 0.5 * double(all.memoryBytes + none.memoryBytes);
  const RecomputeChoice choice = chooseRecompute(none.run, m, limit);
  EXPECT_TRUE(choice.fits);
  EXPECT_FALSE(choice.chosen.segments.empty());
  EXPECT_LE(double(choice.chosen.memoryBytes), limit);
  EXPECT_EQ(choice.option.mode, RecomputeOption::Mode::Ranges);
  EXPECT_EQ(choice.considered.front().segments, allSegments(none.run.model.stepGraph()));
  for (const RecomputeCandidate& k : choice.considered)
    if (k.fits) EXPECT_LE(choice.chosen.seconds, k.seconds);
  // The layout costed with `auto` holds and takes what the choice says, and fits where it
  // does not without recomputation.
  const LayoutChoice chosen = costed(withRecompute(c, "auto"), m, limit);
  EXPECT_TRUE(chosen.recomputeChosen);
  EXPECT_TRUE(chosen.fits);
  EXPECT_FALSE(costed(c, m, limit).fits);
  EXPECT_EQ(toString(chosen.run.model.options.recompute), toString(choice.option));
  EXPECT_EQ(chosen.memoryBytes, choice.chosen.memoryBytes);
  EXPECT_NEAR(chosen.cost.phases.step(), choice.chosen.seconds, 1e-9);
  // Its memory is what a plan with those ranges holds.
  const LayoutChoice ranges = costed(withRecompute(c, toString(choice.option)), m, limit);
  EXPECT_EQ(ranges.memoryBytes, chosen.memoryBytes);
  // withRecompute places the activations as a plan with the option does.
  const RunPlan replanned = withRecompute(none.run, parseRecompute("all"));
  EXPECT_EQ(replanned.memory.at(0).activations, all.run.memory.at(0).activations);
  EXPECT_EQ(replanned.memory.at(0).total(), all.run.memory.at(0).total());
}

TEST(RecomputeChoice, NothingWhereTheRunFitsAndARefusalWhereAllDoesNot) {
  const Machine m = someMachine();
  const TrainConfig c = cosmoflow(2, 32);
  const LayoutChoice none = costed(c, m, 0), all = costed(withRecompute(c, "all"), m, 0);
  const RecomputeChoice roomy = chooseRecompute(none.run, m, double(none.memoryBytes));
  EXPECT_TRUE(roomy.fits);
  EXPECT_TRUE(roomy.option.ranges.empty());
  EXPECT_EQ(roomy.chosen.seconds, none.cost.phases.step());
  const double tight = double(all.memoryBytes) - 1;
  const RecomputeChoice refused = chooseRecompute(none.run, m, tight);
  EXPECT_FALSE(refused.fits);
  EXPECT_THROW(resolveRecompute(none.run, m, tight), Error);
  // A layout that does not fit even so is costed with `all`, and does not fit.
  const LayoutChoice over = costed(withRecompute(c, "auto"), m, tight);
  EXPECT_FALSE(over.fits);
  EXPECT_EQ(over.memoryBytes, all.memoryBytes);
}

TEST(LayoutSearch, SearchesMinimumBoxWidthsOncePerDistinctSetOfLayerGrids) {
  const Machine m = someMachine();
  const auto layouts = searchLayouts<float>(cosmoflow(4, 32), 8, m, 0, {"x", 16}, {});
  int staged = 0;
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    const LayoutChoice& a = layouts[i];
    EXPECT_EQ(a.run.model.staged(), a.layout.minimumBoxWidth > 0) << toString(a.layout);
    staged += a.layout.minimumBoxWidth > 0;
    for (std::size_t j = 0; j < i; ++j) {
      const LayoutChoice& b = layouts[j];
      if (a.layout.groups != b.layout.groups || a.layout.grid != b.layout.grid) continue;
      std::vector<Int3> ga, gb;
      for (const LayerPlan& l : a.run.model.layers) ga.push_back(l.grid);
      for (const LayerPlan& l : b.run.model.layers) gb.push_back(l.grid);
      EXPECT_NE(ga, gb) << toString(a.layout) << " repeats " << toString(b.layout);
    }
  }
  EXPECT_GT(staged, 0);
}

TEST(LayoutSearch, ALayoutWithAWidthReplacesTheDecksLayerGrids) {
  const Layout k = parseLayout("4:8x2x2/16");
  EXPECT_EQ(k.groups, 4);
  EXPECT_EQ(k.grid, (Int3{8, 2, 2}));
  EXPECT_EQ(k.minimumBoxWidth, 16);
  EXPECT_EQ(toString(k), "4:8x2x2/16");
  EXPECT_EQ(toString(parseLayout("4:2x1x1")), "4:2x1x1");
  for (const char* bad : {"4:2x1x1/0", "4:2x1x1/", "4:2x1x1/x", "4:2x1/4", "4:2x1x1/4/4"})
    EXPECT_THROW(parseLayout(bad), Error) << bad;
  TrainConfig c = cosmoflow(2, 32);
  c.model.layerGrids.entries = parseLayerGridEntries("conv5..fc3=1x1x1");
  EXPECT_EQ(configFor(c, parseLayout("1:2x1x1")).model.layerGrids.entries.size(), 1u);
  const LayerGridRule k8 = configFor(c, parseLayout("1:2x1x1/8")).model.layerGrids;
  EXPECT_TRUE(k8.entries.empty());
  EXPECT_EQ(k8.minimumBoxWidth, 8);
}

TEST(LayoutSearch, RanksTheLayoutsThatFitFirstAndFastestFirst) {
  const Machine m = someMachine();
  const auto layouts = searchLayouts<float>(cosmoflow(4, 32), 8, m, 0, {"x", 16}, {});
  ASSERT_FALSE(layouts.empty());
  for (const LayoutChoice& l : layouts) {
    EXPECT_EQ(l.layout.ranks(), 8);
    EXPECT_EQ(4 % l.layout.groups, 0);  // groups divide the mini-batch
  }
  for (std::size_t i = 1; i < layouts.size(); ++i) {
    if (layouts[i].fits == layouts[i - 1].fits) {
      EXPECT_LE(layouts[i - 1].cost.phases.step(), layouts[i].cost.phases.step());
    } else {
      EXPECT_TRUE(layouts[i - 1].fits);  // those that fit come first
    }
  }
  // A memory limit below every layout's need: none fits, all still listed.
  const auto none = searchLayouts<float>(cosmoflow(4, 32), 8, m, 1.0, {"x", 16}, {});
  EXPECT_EQ(none.size(), layouts.size());
  for (const LayoutChoice& l : none) EXPECT_FALSE(l.fits);
  EXPECT_EQ(toString(parseLayout("4:2x1x1").grid), "2x1x1");
  EXPECT_THROW(parseLayout("4x2x1x1"), Error);
}

}  // namespace
}  // namespace hybrid3d::test
