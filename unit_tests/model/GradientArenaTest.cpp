// The activation gradients share one arena, placed by their lives (model/GradientPlacement.hpp):
// a gradient's memory holds whatever an earlier gradient (of this step or of the step before)
// left there when its life starts. No layer may rely on it starting at zero (a zero-initialised
// ghost cell, an accumulation into dx): a second step with the same input and dL/d(output)
// (batch norm's running statistics reset to the first's) gives every parameter gradient of the
// first bit for bit, on 1 rank and on even and uneven grids, for CosmoFlow (convolutions,
// average pools, dropout, the dense head) and the U-Net (max pools, transposed convolutions,
// batch norm, the skip connections' concat and summed gradients). And the arena is smaller
// than the gradients on their own.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "GridCases.hpp"
#include "GroupStep.hpp"

namespace hybrid3d::test {
namespace {

// One forward and backward with dL/d(output) := `seed` everywhere; this rank's parameter
// gradients, in the graph's order.
std::vector<std::vector<double>> stepGradients(Graph<T, TestDevice>& g, double seed) {
  TestExecSpace exec;
  g.zeroGradients(exec);
  g.forward(exec);
  const auto& dOut = g.outputGradient();
  if (dOut.isVolume())
    Kokkos::deep_copy(dOut.volume.view(), seed);
  else
    Kokkos::deep_copy(dOut.features, seed);
  g.backward(exec);
  exec.fence();
  std::vector<std::vector<double>> grads;
  for (const auto& p : g.parameters()) grads.push_back(hostValues(p.param.grad));
  return grads;
}

void expectSecondStepEqualsTheFirst(const ModelOptions& o, int channels,
                                    const std::vector<GridCase>& cases) {
  const Batch batch = makeBatch(2, channels, o.inputWidth, 1, 17);
  const int ran = forEachGrid(cases, [&](const ProcessGrid& grid, const GridCase&) {
    TestExecSpace exec;
    GroupStep step = startGroupStep(grid, o, batch, exec);
    auto& g = *step.model.graph;
    const GraphMemory m = g.memory();
    EXPECT_LT(m.activationGradients, m.activationGradientBuffers)
        << "the arena shares nothing: " << m.activationGradients << " bytes";
    // Batch norm's running statistics move each step, and its batch statistics are summed
    // shifted by them: the second step starts from the first's.
    std::vector<Kokkos::View<ParamOf<T>*, TestDevice>> saved;
    for (const auto& b : g.buffers()) {
      saved.emplace_back("saved " + b.path(), b.param.value.size());
      Kokkos::deep_copy(saved.back(), b.param.value);
    }
    const auto first = stepGradients(g, 0.5);
    for (std::size_t i = 0; i < saved.size(); ++i)
      Kokkos::deep_copy(g.buffers()[i].param.value, saved[i]);
    const auto second = stepGradients(g, 0.5);
    ASSERT_EQ(first.size(), second.size());
    for (std::size_t i = 0; i < first.size(); ++i)
      EXPECT_TRUE(first[i] == second[i]) << g.parameters()[i].path() << " differs in step 2";
  });
  EXPECT_GE(ran, 1);
}

TEST(GradientArena, CosmoFlowSecondStepGradientsEqualTheFirst) {
  ModelOptions o;
  o.architecture = "cosmoflow";
  o.inputWidth = 32;
  o.seed = 5;  // dropout on: the same masks both steps (same step number)
  expectSecondStepEqualsTheFirst(o, 4, {{{1, 1, 1}, 1}, {{2, 1, 1}, 1}, {{3, 1, 1}, 1}});
}

TEST(GradientArena, UNetSecondStepGradientsEqualTheFirst) {
  ModelOptions o;
  o.architecture = "unet3d";
  o.inputWidth = 16;
  o.seed = 9;
  // A U-Net step is the expensive one: one grid, split where the skip connections' halos are.
  if (worldSize() < 2) GTEST_SKIP() << "runs on 2 ranks or more (a U-Net step on 2x1x1)";
  expectSecondStepEqualsTheFirst(o, 1, {{{2, 1, 1}, 1}});
}

// Recomputation over two steps (model/Recompute.hpp): with ranges, every parameter gradient of
// each step and batch norm's running statistics after them equal the run without, bit for bit (the
// replayed batch norm neither reduces its statistics again nor moves its running ones), and the
// activations' arena holds less than they would alone. The U-Net has every kind of layer a replay
// must get right: batch norm, max pools (their winners), transposed convolutions, the skip
// connections kept across segments.
void expectRecomputedStepsEqual(const ModelOptions& o, const std::string& setting,
                                const GridCase& c) {
  const Batch batch = makeBatch(2, 1, o.inputWidth, 1, 17);
  const int ran = forEachGrid({c}, [&](const ProcessGrid& grid, const GridCase&) {
    TestExecSpace exec;
    ModelOptions r = o;
    r.recompute = parseRecompute(setting);
    GroupStep plain = startGroupStep(grid, o, batch, exec),
              again = startGroupStep(grid, r, batch, exec);
    auto &p = *plain.model.graph, &g = *again.model.graph;
    ASSERT_FALSE(g.recomputeSegments().empty());
    std::size_t recomputed = 0;
    for (std::size_t i = 0; i < g.size(); ++i) recomputed += g.recomputes(i);
    EXPECT_GT(recomputed, 0u) << setting << " recomputes no output";
    EXPECT_LT(g.memory().activations, p.memory().activations) << setting;
    for (int step = 3; step < 5; ++step) {
      p.setStep(step, plain.first);
      g.setStep(step, again.first);
      const auto want = stepGradients(p, 0.5), got = stepGradients(g, 0.5);
      for (std::size_t i = 0; i < want.size(); ++i)
        EXPECT_TRUE(got[i] == want[i]) << g.parameters()[i].path() << " differs in step " << step;
    }
    const auto pb = p.buffers(), gb = g.buffers();
    ASSERT_EQ(pb.size(), gb.size());
    for (std::size_t i = 0; i < pb.size(); ++i)
      EXPECT_TRUE(hostValues(pb[i].param.value) == hostValues(gb[i].param.value))
          << gb[i].path() << " differs after two steps";
  });
  EXPECT_GE(ran, 1);
}

TEST(GradientArena, UNetRecomputedStepsEqualThoseWithout) {
  ModelOptions o;
  o.architecture = "unet3d";
  o.inputWidth = 8;
  o.seed = 9;
  // Once, on 2x1x1 (a U-Net step is the expensive one): the first convolution and its batch norm
  // replayed from the kept model input; the second up to the pool, whose input the skip
  // connection keeps; a one-layer range, which recomputes nothing.
  if (worldSize() != 2) GTEST_SKIP() << "runs at 2 ranks only";
  expectRecomputedStepsEqual(o, "enc1_conv1..enc1_relu1, enc1_conv2..pool1, dec1_bn1",
                             {{2, 1, 1}, 1});
}

}  // namespace
}  // namespace hybrid3d::test
