// Decomposition invariance of whole models on layer grids (docs/design.md section 11): layers on
// coarser grids than the input's, the group's samples re-spread over sub-grids (some holding
// none, ranks in no sub-grid), redistributions between them forward and back. The loss, every
// parameter gradient (reduced as the trainer reduces it) and the step's arithmetic equal the
// 1-rank run in double to 1e-10 relative, through the model's own task (its loss and truth on
// the output's grid), for CosmoFlow, MLPerf CosmoFlow and the U-Net.
#include <gtest/gtest.h>

#include <hybrid3d/layers/DistributedParameter.hpp>
#include <hybrid3d/model/EvalSummary.hpp>
#include <hybrid3d/model/Models.hpp>
#include <hybrid3d/model/RedistributeNode.hpp>

#include "GridCases.hpp"
#include "GroupStep.hpp"
#include "ModelReference.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

// The truth of the group's samples [first, first + L) as the reader hands it to the task: every
// target, and the labels of this rank's box of the input's grid, slot by slot.
struct Truth {
  std::vector<float> targets;
  std::vector<int> labels;
  HostTruth host(int F) const {
    const std::size_t L = targets.size() / std::size_t(F);
    return {targets.data(), std::size_t(F), labels.data(), L ? labels.size() / L : 0};
  }
};

Truth truthOf(const Batch& batch, int first, int L, const Box3& owned) {
  Truth t;
  const int F = int(batch.targets.extent(1));
  for (int n = 0; n < L; ++n) {
    for (int f = 0; f < F; ++f) t.targets.push_back(float(batch.targets(first + n, f, 0, 0, 0)));
    for (Index d = owned.lo[0]; d < owned.hi[0]; ++d)
      for (Index h = owned.lo[1]; h < owned.hi[1]; ++h)
        for (Index w = owned.lo[2]; w < owned.hi[2]; ++w)
          t.labels.push_back(batch.labels(first + n, 0, d, h, w));
  }
  return t;
}

// One forward and backward of the model on `grid` (its layers on the grids o.layerGrids gives),
// this group holding its share of the batch; the loss from the model's task.
Result run(const ProcessGrid& grid, ModelOptions o, const Batch& batch) {
  TestExecSpace exec;
  GroupStep s = startGroupStep(grid, o, batch, exec);
  Model<T, TestDevice>& m = s.model;
  auto& g = *m.graph;
  const Truth truth = truthOf(batch, s.first, s.samples, g.input().volume.owned());
  m.task->load(exec, truth.host(int(batch.targets.extent(1))), 0, s.samples);
  Result r;
  g.forward(exec);
  r.loss = m.task->loss(exec, g, true);
  g.backward(exec);
  r.flops = g.stepFlops();
  MPI_Allreduce(MPI_IN_PLACE, &r.flops, 1, MPI_DOUBLE, MPI_SUM, grid.worldComm());
  for (const auto& p : g.parameters()) r.grads[p.path()] = globalGradient(p.param, grid);
  // A short validation batch: the group's first sample alone, the other slots padding (fewer
  // samples than the output's sub-grids).
  g.setTraining(false);
  m.task->clearMetrics();
  m.task->load(exec, truth.host(int(batch.targets.extent(1))), 0, 1);
  g.forward(exec);
  m.task->addMetrics(exec, g, 1);
  EvalSummary summary;
  m.task->summarize(grid, summary);
  r.validationLoss = summary.loss;
  return r;
}

// How many of the model's nodes are redistributions: a staged layout must have some.
int redistributions(const ProcessGrid& grid, ModelOptions o, int batch) {
  o.batch = batch;
  Model<T, TestDevice> m = buildModel<T, TestDevice>(grid, o);
  int n = 0;
  for (std::size_t i = 0; i < m.graph->size(); ++i)
    n += dynamic_cast<RedistributeNode<T, TestDevice>*>(&m.graph->node(i)) != nullptr;
  return n;
}

struct Staged {
  GridCase grid;
  std::string layerGrids;  // Parallel/layer grids
  int minimumBoxWidth = 0;
  int samplesPerGroup = 2;
};

// Each case runs at the registration of its own rank count only (CTest registers the test at 1,
// 2, 4 and 8 ranks): once each.
void checkStaged(ModelOptions o, int channels, int outputs, const std::vector<Staged>& cases) {
  for (const Staged& c : cases) {
    const int ranks = c.grid.spatial[0] * c.grid.spatial[1] * c.grid.spatial[2] * c.grid.groups;
    if (ranks != worldSize()) continue;
    SCOPED_TRACE(c.grid.name() + " with " + c.layerGrids +
                 " K=" + std::to_string(c.minimumBoxWidth));
    const Batch batch =
        makeBatch(c.samplesPerGroup * c.grid.groups, channels, o.inputWidth, outputs, 11);
    const Result want =
        broadcastFromRankZero(worldRank() == 0 ? run(selfGrid(), o, batch) : Result{});
    ModelOptions staged = o;
    staged.layerGrids.entries = parseLayerGridEntries(c.layerGrids);
    staged.layerGrids.minimumBoxWidth = c.minimumBoxWidth;
    forEachGrid({c.grid}, [&](const ProcessGrid& grid, const GridCase&) {
      EXPECT_GT(redistributions(grid, staged, c.samplesPerGroup), 0) << "not a staged layout";
      const Result got = run(grid, staged, batch);
      expectSame(got, want, 1e-10);
      if (c.grid.groups == 1) {  // the reference's short batch is the same sample
        EXPECT_NEAR(got.validationLoss, want.validationLoss, 1e-10 * std::abs(want.validationLoss))
            << "a short validation batch";
      }
      if (grid.worldRank() == 0) {
        double worst = 0;
        for (const auto& [name, w] : want.grads) {
          const auto& v = got.grads.at(name);
          worst = std::max(worst, maxRelativeError(v, w));
        }
        std::printf(
            "[ layout ] %s %s K=%d, %d samples per group: loss %.3g relative, largest "
            "gradient error %.3g relative\n",
            c.grid.name().c_str(), c.layerGrids.c_str(), c.minimumBoxWidth, c.samplesPerGroup,
            std::abs(got.loss - want.loss) / std::abs(want.loss), worst);
      }
    });
  }
}

ModelOptions options(const std::string& architecture, int width, int seed) {
  ModelOptions o;
  o.architecture = architecture;
  o.inputWidth = width;
  o.seed = seed;  // dropout stays on: its masks must not depend on the layout either
  return o;
}

TEST(LayerGrids, CosmoFlowEqualsOneRankOnStagedLayouts) {
  checkStaged(options("cosmoflow", 32, 5), 4, 4,
              {
                  // 8x1x1 -> 2x1x1 -> 1x1x1, 4 samples: four sub-grids of 2 with a sample each,
                  // then eight of 1, half of them without a sample.
                  {{{8, 1, 1}, 1}, "conv3..act3=2x1x1, pool3..fc3=1x1x1", 0, 4},
                  // 2x2x2 -> 1x1x1 with 8 samples: one per rank from conv4 on.
                  {{{2, 2, 2}, 1}, "conv4..fc3=1x1x1", 0, 8},
                  // 4x1x1 -> 3x1x1 on uneven extents (16 = 6 + 5 + 5): one rank in no
                  // sub-grid; then 1x1x1.
                  {{{4, 1, 1}, 1}, "conv2..act3=3x1x1, pool3..fc3=1x1x1", 0, 2},
                  // Two groups of 2x2x1 -> 1x1x1.
                  {{{2, 2, 1}, 2}, "conv5..fc3=1x1x1", 0, 2},
                  // The automatic rule: boxes at least 8 wide (2x1x1 from pool1 on, 1x1x1
                  // from pool2 on).
                  {{{4, 1, 1}, 1}, "", 8, 2},
                  // The dense part alone on another grid: features moved, not volumes.
                  {{{2, 1, 1}, 1}, "fc2..fc3=1x1x1", 0, 2},
              });
}

TEST(LayerGrids, CosmoFlow64EqualsOneRankOnAStagedLayout) {
  checkStaged(options("cosmoflow", 64, 5), 4, 4,
              {{{{8, 1, 1}, 1}, "conv4..pool4=2x1x1, conv5..fc3=1x1x1", 0, 4}});
}

TEST(LayerGrids, MlperfCosmoFlowEqualsOneRankOnStagedLayouts) {
  checkStaged(options("cosmoflow_mlperf", 32, 3), 4, 4,
              {{{{4, 1, 1}, 1}, "conv3..fc3=1x1x1", 0, 4},
               {{{2, 2, 1}, 1}, "conv2..pool2=3x1x1, conv3..fc3=1x1x1", 0, 2}});
}

TEST(LayerGrids, UNetEqualsOneRankWithACoarseBottom) {
  // 2x2x2 with the bottom on 1x1x1 and the decoder back on the fine grid; the skips stay where
  // they were made.
  checkStaged(options("unet3d", 16, 9), 1, 3,
              {{{{2, 2, 2}, 1}, "pool3..up3=1x1x1", 0, 2},
               // The head on 1x1x1, a sample per rank: the labels move to the output's grid.
               {{{2, 1, 1}, 1}, "head=1x1x1", 0, 2}});
}

TEST(LayerGrids, UNet32EqualsOneRankWithACoarseBottom) {
  // One sample: the bottom's eight 1x1x1 sub-grids hold it on one, the other seven none.
  checkStaged(options("unet3d", 32, 9), 1, 3, {{{{2, 2, 2}, 1}, "pool3..up3=1x1x1", 0, 1}});
}

// Recomputation (model/Recompute.hpp) on a staged layout changes no bit: the loss, every
// gradient, and the evaluation forward after the step on the activations' arena (its validation
// loss), with `all` and with a range through the redistribution onto the coarse grid (replayed
// with the rest of the range).
TEST(LayerGrids, RecomputationOnAStagedLayoutChangesNoBit) {
  if (worldSize() != 2) GTEST_SKIP() << "runs at 2 ranks only";
  ModelOptions o = options("cosmoflow", 16, 5);
  o.layerGrids.entries = parseLayerGridEntries("conv3..fc3=1x1x1");
  const Batch batch = makeBatch(2, 4, o.inputWidth, 4, 11);
  forEachGrid({{{2, 1, 1}, 1}}, [&](const ProcessGrid& grid, const GridCase&) {
    const Result want = run(grid, o, batch);
    for (const char* setting : {"all", "conv2..act3"}) {
      ModelOptions r = o;
      r.recompute = parseRecompute(setting);
      const Result got = run(grid, r, batch);
      EXPECT_EQ(got.loss, want.loss) << setting;
      EXPECT_EQ(got.validationLoss, want.validationLoss) << setting;
      for (const auto& [name, w] : want.grads)
        EXPECT_TRUE(got.grads.at(name) == w) << name << " differs with recompute = " << setting;
    }
  });
}

}  // namespace
}  // namespace hybrid3d::test
