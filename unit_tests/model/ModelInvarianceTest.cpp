// Decomposition invariance of whole models in double precision: the loss and every parameter
// gradient (reduced as the trainer does, gathered into the global tensor) on any process grid,
// with one or two data-parallel groups, equal the 1-rank run over the whole mini-batch to 1e-9
// relative. The arithmetic a step does (Graph::stepFlops, summed over the world) is that of the
// 1-rank run exactly: ranks split the work, none is counted twice or lost.
#include <algorithm>
#include <map>

#include <gtest/gtest.h>

#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/layers/DistributedParameter.hpp>
#include <hybrid3d/layers/MseLoss.hpp>
#include <hybrid3d/layers/SoftmaxCrossEntropy.hpp>
#include <hybrid3d/model/Models.hpp>
#include <hybrid3d/model/Tasks.hpp>

#include "GridCases.hpp"
#include "Invariance.hpp"
#include "GroupStep.hpp"
#include "ModelReference.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

// One forward and backward of the model on `grid`, this group holding its share of the batch.
Result run(const ProcessGrid& grid, ModelOptions o, const Batch& batch) {
  TestExecSpace exec;
  GroupStep step = startGroupStep(grid, o, batch, exec);
  const Model<T, TestDevice>& m = step.model;
  auto& g = *m.graph;
  const int first = step.first, L = step.samples;
  g.forward(exec);
  Result r;
  if (modelTraits(o).task == &regressionTask()) {
    MseLoss<T, TestDevice> loss(grid, "loss", L, m.outputs);
    FeatureView<T, TestDevice> target("target", L, m.outputs);
    auto h = Kokkos::create_mirror_view(target);
    for (int n = 0; n < L; ++n)
      for (int f = 0; f < m.outputs; ++f) h(n, f) = batch.targets(first + n, f, 0, 0, 0);
    Kokkos::deep_copy(target, h);
    r.loss = loss.forward(exec, g.output().features, target);
    loss.backward(exec, g.output().features, target, g.outputGradient().features);
  } else {
    SoftmaxCrossEntropy<T, TestDevice> loss(grid, "loss", g.node(g.size() - 1).outputShape());
    const TensorShape s = g.inputShape();
    auto labels = createDistTensor<int, TestDevice>(
        "labels", L, 1, BlockDecomposition(s.extents, grid.dims()), grid.coords());
    scatterFromGlobal(slice(batch.labels, first, L), labels);
    r.loss = loss.forwardBackward(exec, g.output().volume, labels, g.outputGradient().volume);
  }
  g.backward(exec);
  r.flops = g.stepFlops();
  MPI_Allreduce(MPI_IN_PLACE, &r.flops, 1, MPI_DOUBLE, MPI_SUM, grid.worldComm());
  for (const auto& p : g.parameters()) {
    r.grads[p.path()] = globalGradient(p.param, grid);
    if (!p.param.layout.columnShard) continue;
    r.grads[p.path() + " value"] = gatherGlobal(p.param, p.param.value, grid.worldComm());
    r.shards[p.path()] = {p.param.layout.columns, hostValues(p.param.value),
                          hostValues(p.param.grad)};
  }
  return r;
}

// The 1-rank reference, computed by world rank 0 alone and broadcast.
Result reference(const ModelOptions& o, const Batch& batch) {
  return broadcastFromRankZero(worldRank() == 0 ? run(selfGrid(), o, batch) : Result{});
}

void checkModel(const ModelOptions& o, int channels, int outputs,
                const std::vector<GridCase>& cases) {
  const int B = 2;
  const Batch batch = makeBatch(B, channels, o.inputWidth, outputs, 11);
  const Result want = reference(o, batch);
  const int ran = forEachGrid(cases, [&](const ProcessGrid& grid, const GridCase&) {
    expectSame(run(grid, o, batch), want, 1e-9);
  });
  EXPECT_GE(ran, 1);
}

TEST(Models, CosmoFlowLossAndGradientsEqualOneRankOnEveryGrid) {
  ModelOptions o;
  o.architecture = "cosmoflow";
  o.inputWidth = 32;
  o.seed = 5;  // dropout stays on: its masks must not depend on the grid either
  checkModel(o, 4, 4, standardGridCases());
}

TEST(Models, UNet3dLossAndGradientsEqualOneRankOnEveryLegalGrid) {
  ModelOptions o;
  o.architecture = "unet3d";
  o.inputWidth = 16;
  o.seed = 9;
  // 16^3 halves to 2^3 at the bottom (for a 3-way split see the next test). Each grid costs a
  // full U-Net step (about 50 GFLOP for two samples): one of each shape.
  checkModel(o, 1, 3,
             {{{1, 1, 1}, 1},
              {{1, 1, 1}, 2},
              {{2, 1, 1}, 1},
              {{1, 2, 2}, 1},
              {{2, 1, 1}, 2},
              {{2, 2, 2}, 1}});
}

TEST(Models, UNet3dMatchesOneRankWhereARankOwnsNoBottomInput) {
  // 16^3 on 3x1x1: the bottom's D = 2 leaves rank 2 no voxel, yet up3 (2 -> 4) gives it output
  // voxel 3, which reads bottom voxel 1 on rank 1 as a ghost of its empty box. Refused while an
  // empty box had no ghosts.
  const BlockDecomposition bottom({2, 2, 2}, {3, 1, 1}), up3({4, 4, 4}, {3, 1, 1});
  ASSERT_TRUE(someRankOwnsOutputButNoInput(bottom, up3));
  // A full U-Net step (about 80 s at 4 ranks on 2 busy cores): run once, at 4 ranks.
  if (worldSize() != 4) GTEST_SKIP() << "runs at 4 ranks only (a full U-Net step)";
  ModelOptions o;
  o.architecture = "unet3d";
  o.inputWidth = 16;
  o.seed = 9;
  checkModel(o, 1, 3, {{{3, 1, 1}, 1}});
}

// The first dense layer's weight is a column shard: each rank holds exactly the 1-rank weight's
// columns of its own voxels (bit for bit: the initialiser draws the global tensor), the shards
// of a spatial group are disjoint and cover the weight, and after the reduction (over the
// data-parallel groups only) the local gradient is the 1-rank gradient's columns. At 32^3 fc1
// reads 256 x 2^3: 2x2x2 gives each rank one voxel, 3x1x1 is uneven and leaves rank 2 an empty
// box (no columns at all).
TEST(Models, FirstDenseWeightHoldsOnlyItsOwnColumnsOfTheOneRankWeight) {
  if (worldSize() < 2) GTEST_SKIP() << "needs a grid of 2 or more ranks";
  ModelOptions o;
  o.architecture = "cosmoflow";
  o.inputWidth = 32;
  o.seed = 5;
  const Batch batch = makeBatch(2, 4, o.inputWidth, 4, 11);
  const Result want = reference(o, batch);
  const TensorShape fc1In{1, 256, {2, 2, 2}};
  const Index width = 256 * 8, rows = 2048;
  const int ran = forEachGrid(
      {{{2, 2, 2}, 1}, {{3, 1, 1}, 1}, {{2, 1, 1}, 2}, {{1, 1, 2}, 1}},
      [&](const ProcessGrid& grid, const GridCase&) {
        const Result got = run(grid, o, batch);
        ASSERT_EQ(got.shards.size(), 1u);
        const Shard& s = got.shards.at("fc1/weight");
        const Box3 own = BlockDecomposition(fc1In.extents, grid.dims()).ownedBox(grid.coords());
        const Index K = fc1In.channels * own.size();
        ASSERT_EQ(Index(s.columns.size()), K);
        ASSERT_EQ(Index(s.value.size()), rows * K);
        // Disjoint and covering over the spatial group.
        int count = int(K), total = 0;
        MPI_Allreduce(&count, &total, 1, MPI_INT, MPI_SUM, grid.spatialComm());
        EXPECT_EQ(total, width);
        std::vector<long long> mine(s.columns.begin(), s.columns.end()), all(width, -1);
        std::vector<int> counts(grid.spatialSize()), offsets(grid.spatialSize(), 0);
        MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, grid.spatialComm());
        for (int r = 1; r < grid.spatialSize(); ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
        if (total == width)
          MPI_Allgatherv(mine.data(), count, MPI_LONG_LONG, all.data(), counts.data(),
                         offsets.data(), MPI_LONG_LONG, grid.spatialComm());
        std::sort(all.begin(), all.end());
        for (Index c = 0; c < width; ++c) ASSERT_EQ(all[c], c) << "column " << c;
        // Values: exactly the 1-rank weight's columns; reduced gradient: its gradient's.
        const std::vector<double>& wv = want.grads.at("fc1/weight value");
        const std::vector<double>& wg = want.grads.at("fc1/weight");
        std::size_t differ = 0;
        double diff = 0, scale = 0;
        for (Index r = 0; r < rows; ++r)
          for (Index k = 0; k < K; ++k) {
            const std::size_t g = std::size_t(r * width + s.columns[k]), l = std::size_t(r * K + k);
            differ += s.value[l] != wv[g];
            diff = std::max(diff, std::abs(s.reducedGrad[l] - wg[g]));
            scale = std::max(scale, std::abs(wg[g]));
          }
        EXPECT_EQ(differ, 0u) << "of " << rows * K << " weight values";
        EXPECT_LE(diff, 1e-9 * scale) << "max relative error " << diff / scale;
        if (K > 0) {
          EXPECT_GT(scale, 0.0) << "a zero gradient would prove nothing";
        }
      });
  EXPECT_GE(ran, 1);
}

// Activation recomputation (model/Recompute.hpp) changes no bit: on the same grid the loss and
// every gradient with `all` and with ranges equal those without, exactly (a recomputed forward
// replays the first one's arithmetic, and every backward reads the same values). The ranges span
// two convolutions, so conv2 replays from a recomputed input (its halo exchanged again), and the
// dense head with its dropouts (the same masks); act1..conv2 ends at a convolution whose input is
// recomputed and whose forward is not replayed (its backward-weights gathers that input's halo
// again); `all` replays each convolution from its kept
// input (no exchange), here with the halo overlapped (the U-Net's, in GradientArenaTest, without).
// Each case runs at the smallest rank count CTest runs that holds it (cheap).
void expectRecomputationChangesNothing(ModelOptions o, int channels, int outputs,
                                       const std::vector<std::string>& settings,
                                       std::vector<GridCase> cases) {
  const Batch batch = makeBatch(2, channels, o.inputWidth, outputs, 11);
  cases.erase(std::remove_if(cases.begin(), cases.end(),
                             [](const GridCase& c) {
                               return 2 * c.spatial[0] * c.spatial[1] * c.spatial[2] * c.groups <=
                                      worldSize();
                             }),
              cases.end());
  if (cases.empty()) GTEST_SKIP() << "every case runs at fewer ranks";
  const int ran = forEachGrid(cases, [&](const ProcessGrid& grid, const GridCase&) {
    const Result want = run(grid, o, batch);
    for (const std::string& setting : settings) {
      o.recompute = parseRecompute(setting);
      const Result got = run(grid, o, batch);
      o.recompute = {};
      EXPECT_EQ(got.loss, want.loss) << setting;
      ASSERT_EQ(got.grads.size(), want.grads.size());
      for (const auto& [name, w] : want.grads)
        EXPECT_TRUE(got.grads.at(name) == w) << name << " differs with recompute = " << setting;
    }
  });
  EXPECT_GE(ran, 1);
}

TEST(Models, CosmoFlowRecomputationChangesNoBitOnEveryGrid) {
  ModelOptions o;
  o.architecture = "cosmoflow";
  o.inputWidth = 16;
  o.seed = 5;            // dropout on
  o.convOverlap = true;  // a replay from a kept input computes the interior and shell parts too
  expectRecomputationChangesNothing(
      o, 4, 4, {"all", "conv1..pool2, fc1..drop3", "act1..conv2"},
      {{{1, 1, 1}, 1}, {{2, 1, 1}, 1}, {{3, 1, 1}, 1}, {{2, 1, 1}, 2}});
}

TEST(Models, CosmoFlowMlperfLossAndGradientsEqualOneRank) {
  ModelOptions o;
  o.architecture = "cosmoflow_mlperf";
  o.inputWidth = 32;
  o.seed = 3;
  checkModel(o, 4, 4,
             {{{1, 1, 1}, 1}, {{2, 1, 1}, 1}, {{1, 2, 2}, 1}, {{3, 1, 1}, 1}, {{2, 1, 1}, 2}});
}

}  // namespace
}  // namespace hybrid3d::test
