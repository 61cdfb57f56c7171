// Whole models in the 16-bit activation types (Model/precision bfloat16 and half) against float,
// on the same inputs (rounded to the 16-bit type first, so both runs see identical values) and
// the same float master weights (the same seed initialises both):
//   - the loss and every parameter's gradient, each tensor's normwise relative error printed
//     and bounded;
//   - decomposition invariance of the 16-bit run itself: on 2x2x1, on two groups of 2x1x1 and on
//     the uneven 3x1x1
//     its loss and gradients equal its own 1-rank run's to the rounding of the sums' order.
//
// The bounds. A 16-bit run rounds every stored activation and activation gradient once (unit
// roundoff u = 2^-8 for bfloat16, 2^-11 for half); the arithmetic between roundings is float.
// The loss, a mean of the output's rounded values, stays within 2 u of float's. A parameter
// gradient carries two errors:
//   - the roundings, reaching it amplified where its sum over voxels cancels: measured on
//     CosmoFlow with every LeakyReLU's slope set to 1 (no kink; a scratch run) at most 2.6 u
//     (bfloat16) and 1.8 u (half) on every tensor; the U-Net's deepest layers, through the batch
//     norms' backward (another cancellation), up to 85 u in bfloat16;
//   - the kinks: where a LeakyReLU's input lies within its sum's rounding error of 0 (an error
//     relative to the sum's terms, not to the value) its sign differs from float's and the
//     derivative jumps between 1 and the slope, so the activation gradient there is wrong by all
//     of itself. Such cells make a fraction proportional to u, so the gradients of every layer
//     below the first of them (in backward order) are off by about sqrt(u) normwise: in units
//     of u 16 for bfloat16 but 45 for half. layers/pointwise_dense/LeakyReluKinkTest.cpp
//     isolates it. On CosmoFlow half flips 3 of act6's 4096 inputs and none of act7's, act_fc1's
//     or act_fc2's: conv7 and the dense layers at most 1.5 u, conv1-6 51-97 u = 1.1-2.1 sqrt(u)
//     (up to 108 u measured before with either engine, with or without dropout, at loss scale
//     2^10 or 2^16); bfloat16 flips 5 of act7's: conv1-7 16-30 u = 1.0-1.9 sqrt(u). It is
//     inherent: the 16-bit run's gradient is the exact gradient of its own rounded forward.
// The test holds each tensor to the larger of 4 L u (L the model's layers: CosmoFlow 17, the
// U-Net 27) and 3 sqrt(u): the roundings or the kinks, with a margin; a wrong kernel, a missed
// halo or a sum in 16 bits is O(1).
// A decomposition changes the order of float sums and the engine of small boxes (the kokkos
// engine below oneDnnMinOutputVoxels), which flips the rounding of some stored 16-bit values:
// the loss stays within u of the 1-rank run's (measured 0.2 u), each gradient within 2 L u
// (measured 12 u on CosmoFlow): the same amplified rounding noise, smaller than against float.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/layers/DistributedParameter.hpp>
#include <hybrid3d/layers/MseLoss.hpp>
#include <hybrid3d/layers/SoftmaxCrossEntropy.hpp>
#include <hybrid3d/model/Models.hpp>
#include <hybrid3d/model/Tasks.hpp>

#include "GridCases.hpp"
#include "Invariance.hpp"
#include "ModelReference.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

template <class A>
constexpr double unitRoundoff() {
  if constexpr (std::is_same_v<A, bfloat16>) return 1.0 / 256;  // 2^-8
  if constexpr (std::is_same_v<A, float16>) return 1.0 / 2048;  // 2^-11
  return 1.0 / 16777216;                                        // float, 2^-24
}

// The 16-bit type's value of every element, as a global array of A.
template <class A>
GlobalArray<A> roundedTo(const GlobalArray<double>& a) {
  GlobalArray<A> r(a.label(), a.extent(0), a.extent(1), a.extent(2), a.extent(3), a.extent(4));
  for (std::size_t i = 0; i < a.size(); ++i) r.data()[i] = A(float(a.data()[i]));
  return r;
}

// The batch's inputs rounded to bfloat16 (kept as doubles).
GlobalArray<double> roundedToGlobal(const GlobalArray<double>& a) {
  GlobalArray<double> r(a.label(), a.extent(0), a.extent(1), a.extent(2), a.extent(3), a.extent(4));
  for (std::size_t i = 0; i < a.size(); ++i) r.data()[i] = float(bfloat16(float(a.data()[i])));
  return r;
}

// One forward and backward of the model in activation type A on `grid`, this group holding its
// share of the batch; the loss gradient multiplied by `gradientScale` and the parameter
// gradients divided by it again (half's loss scaling, train/LossScale.hpp).
template <class A>
Result runAs(const ProcessGrid& grid, ModelOptions o, const Batch& batch,
             double gradientScale = 1.0) {
  TestExecSpace exec;
  const int L = int(batch.inputs.extent(0)) / grid.numGroups(), first = grid.group() * L;
  o.batch = L;
  Model<A, TestDevice> m = buildModel<A, TestDevice>(grid, o);
  auto& g = *m.graph;
  // Inputs rounded to bfloat16 for every type: bfloat16 values are exact in half (within its
  // range) and in float, so every run starts from the same numbers.
  scatterFromGlobal(roundedTo<A>(roundedToGlobal(slice(batch.inputs, first, L))), g.input().volume);
  g.setTraining(true);
  g.setStep(3, first);
  g.zeroGradients(exec);
  g.forward(exec);
  Result r;
  if (modelTraits(o).task == &regressionTask()) {
    MseLoss<A, TestDevice> loss(grid, "loss", L, m.outputs);
    FeatureView<A, TestDevice> target("target", L, m.outputs);
    auto h = Kokkos::create_mirror_view(target);
    for (int n = 0; n < L; ++n)
      for (int f = 0; f < m.outputs; ++f)
        h(n, f) = A(float(bfloat16(float(batch.targets(first + n, f, 0, 0, 0)))));
    Kokkos::deep_copy(target, h);
    r.loss = loss.forward(exec, g.output().features, target);
    loss.backward(exec, g.output().features, target, g.outputGradient().features, gradientScale);
  } else {
    SoftmaxCrossEntropy<A, TestDevice> loss(grid, "loss", g.node(g.size() - 1).outputShape());
    const TensorShape s = g.inputShape();
    auto labels = createDistTensor<int, TestDevice>(
        "labels", L, 1, BlockDecomposition(s.extents, grid.dims()), grid.coords());
    scatterFromGlobal(slice(batch.labels, first, L), labels);
    r.loss = loss.forwardBackward(exec, g.output().volume, labels, g.outputGradient().volume,
                                  gradientScale);
  }
  g.backward(exec);
  for (const auto& p : g.parameters()) {
    std::vector<ParamOf<A>> grad = globalGradient(p.param, grid);
    std::vector<double>& out = r.grads[p.path()];
    for (ParamOf<A> v : grad) out.push_back(double(v) / gradientScale);
  }
  return r;
}

struct Errors {
  double loss = 0;
  std::map<std::string, double> grads;  // normwise relative, per tensor
};

Errors relativeErrors(const Result& got, const Result& want) {
  Errors e;
  e.loss = std::abs(got.loss - want.loss) / std::abs(want.loss);
  for (const auto& [name, w] : want.grads) {
    const auto& v = got.grads.at(name);
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      diff += (v[i] - w[i]) * (v[i] - w[i]);
      norm += w[i] * w[i];
    }
    EXPECT_GT(norm, 0.0) << name << " has a zero gradient: the test would prove nothing";
    e.grads[name] = std::sqrt(diff / norm);
  }
  return e;
}

// Rank 0: float and A on one rank, the errors printed and bounded.
template <class A>
void checkAgainstFloat(const char* type, const ModelOptions& o, int channels, int outputs,
                       int layers, double gradientScale = 1.0) {
  if (worldRank() != 0) return;
  const Batch batch = makeBatch(2, channels, o.inputWidth, outputs, 11);
  const Result f = runAs<float>(selfGrid(), o, batch);
  const Result h = runAs<A>(selfGrid(), o, batch, gradientScale);
  const Errors e = relativeErrors(h, f);
  const double u = unitRoundoff<A>();
  const double bound = std::max(4.0 * layers * u, 3.0 * std::sqrt(u));
  std::printf("  %s %s %d^3 against float: loss %.6g vs %.6g (relative %.2e, bound %.2e)\n",
              o.architecture.c_str(), type, o.inputWidth, h.loss, f.loss, e.loss, 2 * u);
  EXPECT_LE(e.loss, 2 * u);
  double worst = 0;
  for (const auto& [name, err] : e.grads) {
    std::printf("    gradient %-28s relative error %.2e (%.2f u)\n", name.c_str(), err, err / u);
    EXPECT_LE(err, bound) << name;
    worst = std::max(worst, err);
  }
  std::printf(
      "    largest %.2e = %.1f u = %.2f sqrt(u), bound %.2e = max(4 x %d layers x u, "
      "3 sqrt(u))\n",
      worst, worst / u, worst / std::sqrt(u), bound, layers);
}

// The A run on 2x2x1, on 2 groups of 2x1x1 and on the uneven 3x1x1 (32 = 11 + 11 + 10 planes)
// against its own 1-rank run, every convolution on the portable kokkos engine: `auto` chooses
// each pass's engine by timing it on each rank's box, so the 1-rank run and a split one may
// round in different engines, by more than a decomposition does.
template <class A>
void checkDecomposition(ModelOptions o, int channels, int outputs, int layers) {
  o.convEngine = ConvEngine::Kokkos;
  const Batch batch = makeBatch(2, channels, o.inputWidth, outputs, 11);
  const Result want =
      broadcastFromRankZero(worldRank() == 0 ? runAs<A>(selfGrid(), o, batch) : Result{});
  const double u = unitRoundoff<A>();
  const int ran = forEachGrid(
      {{{2, 2, 1}, 1}, {{2, 1, 1}, 2}, {{3, 1, 1}, 1}},
      [&](const ProcessGrid& grid, const GridCase& c) {
        const Result got = runAs<A>(grid, o, batch);
        const Errors e = relativeErrors(got, want);
        EXPECT_LE(e.loss, u) << c.name();
        double worst = 0;
        for (const auto& [name, err] : e.grads) {
          EXPECT_LE(err, 2.0 * layers * u) << c.name() << " " << name;
          worst = std::max(worst, err);
        }
        if (grid.worldRank() == 0)
          std::printf("  %s on %s: loss relative %.2e, largest gradient error %.2e (%.2f u)\n",
                      o.architecture.c_str(), c.name().c_str(), e.loss, worst, worst / u);
      });
  if (worldSize() >= 4) {
    EXPECT_EQ(ran, 3);
  }
}

ModelOptions cosmoflow() {
  ModelOptions o;
  o.architecture = "cosmoflow";
  o.inputWidth = 32;
  o.seed = 5;
  return o;
}

ModelOptions unet() {
  ModelOptions o;
  o.architecture = "unet3d";
  o.inputWidth = 16;
  o.seed = 9;
  return o;
}

TEST(MixedPrecision, CosmoFlowBFloat16AgainstFloat) {
  checkAgainstFloat<bfloat16>("bfloat16", cosmoflow(), 4, 4, 17);
}

// Half with the default loss scale, 2^16: the gradients come back divided by it.
TEST(MixedPrecision, CosmoFlowHalfAgainstFloat) {
  checkAgainstFloat<float16>("half", cosmoflow(), 4, 4, 17, 65536.0);
}

TEST(MixedPrecision, UNet3dBFloat16AgainstFloat) {
  checkAgainstFloat<bfloat16>("bfloat16", unet(), 1, 3, 27);
}

// Recomputation (model/Recompute.hpp) in bfloat16 changes no bit either: the replays round as the
// first forward did. CosmoFlow 16^3 on 2x2x1 with `all` and with a range over two convolutions.
TEST(MixedPrecision, BFloat16RecomputationChangesNoBit) {
  ModelOptions o = cosmoflow();
  o.inputWidth = 16;
  const Batch batch = makeBatch(2, 4, o.inputWidth, 4, 11);
  const int ran = forEachGrid({{{2, 2, 1}, 1}}, [&](const ProcessGrid& grid, const GridCase&) {
    const Result want = runAs<bfloat16>(grid, o, batch);
    for (const char* setting : {"all", "conv1..pool2"}) {
      ModelOptions r = o;
      r.recompute = parseRecompute(setting);
      const Result got = runAs<bfloat16>(grid, r, batch);
      EXPECT_EQ(got.loss, want.loss) << setting;
      for (const auto& [name, w] : want.grads)
        EXPECT_TRUE(got.grads.at(name) == w) << name << " differs with recompute = " << setting;
    }
  });
  EXPECT_EQ(ran, 1);
}

TEST(MixedPrecision, CosmoFlowBFloat16EqualsItsOneRankRun) {
  checkDecomposition<bfloat16>(cosmoflow(), 4, 4, 17);
}

}  // namespace
}  // namespace hybrid3d::test
