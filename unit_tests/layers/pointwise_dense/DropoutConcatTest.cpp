// Dropout: the mask is the same on every grid and data-parallel split (keyed by global sample
// and element), backward applies the forward's mask, keep = 1 and inference are the identity,
// bad keep probabilities are refused. Concat: channel concatenation with any ghosts. Both, and
// the point-wise activations, refuse a tensor of another shape with the geometry's one message.
#include <cmath>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/layers/Activation.hpp>
#include <hybrid3d/layers/Concat.hpp>
#include <hybrid3d/layers/Dropout.hpp>

#include "ErrorOf.hpp"
#include "GridCases.hpp"
#include "Invariance.hpp"
#include "TestDevice.hpp"
#include "TestHelpers.hpp"

namespace hybrid3d::test {
namespace {

using Exec = TestExecSpace;
const Index3 kExtents{5, 4, 3};
const int kBatch = 2, kChannels = 3;

// Dropout forward and backward on `grid`: this rank's group holds samples
// [first, first + x.extent(0)) of the global mini-batch.
std::pair<GlobalArray<double>, GlobalArray<double>> runDropout(const ProcessGrid& grid,
                                                               const GlobalArray<double>& x,
                                                               const GlobalArray<double>& dy,
                                                               Index first, double keep) {
  const int N = int(x.extent(0));
  Dropout<double, TestDevice> layer(grid, "fc1_dropout", {N, kChannels, kExtents}, {keep, 42});
  layer.setStep(7, first);
  const BlockDecomposition& dec = layer.inputDecomposition();
  auto xt = createDistTensor<double, TestDevice>("x", N, kChannels, dec, grid.coords(),
                                                 {{1, 0, 0}, {0, 2, 1}});
  auto yt = createDistTensor<double, TestDevice>("y", N, kChannels, dec, grid.coords(),
                                                 GhostWidths::uniform(1));
  auto dyt = createDistTensor<double, TestDevice>("dy", N, kChannels, dec, grid.coords());
  auto dxt = createDistTensor<double, TestDevice>("dx", N, kChannels, dec, grid.coords(),
                                                  {{0, 0, 1}, {0, 0, 0}});
  scatterFromGlobal(x, xt);
  scatterFromGlobal(dy, dyt);
  layer.forward(Exec(), xt, yt);
  layer.backward(Exec(), xt, dyt, dxt);
  return {gatherToGlobal(yt, grid.spatialComm()), gatherToGlobal(dxt, grid.spatialComm())};
}

TEST(Dropout, MaskIsTheSameOnEveryGrid) {
  const int ran = forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase& c) {
    // The global mini-batch of G*N samples; group g holds samples [g*N, (g+1)*N).
    const int total = kBatch * c.groups;
    const auto x = randomGlobal<double>("x", total, kChannels, kExtents, 3);
    const auto dy = randomGlobal<double>("dy", total, kChannels, kExtents, 4);
    const Index first = grid.group() * kBatch;
    const auto got =
        runDropout(grid, samples(x, first, kBatch), samples(dy, first, kBatch), first, 0.75);
    const auto want = runDropout(selfGrid(), x, dy, 0, 0.75);
    expectSameArray(got.first, samples(want.first, first, kBatch), 0.0, "output");
    expectSameArray(got.second, samples(want.second, first, kBatch), 0.0, "grad_input");
  });
  EXPECT_GE(ran, 1);
}

// Backward zeroes exactly the elements forward dropped and scales the rest by 1/keep; about
// 1 - keep of the elements are dropped.
TEST(Dropout, BackwardAppliesTheForwardMask) {
  const double keep = 0.75;
  const auto x = randomGlobal<double>("x", kBatch, kChannels, kExtents, 5, 0.5, 1.0);  // no zeros
  const auto dy = randomGlobal<double>("dy", kBatch, kChannels, kExtents, 6, 0.5, 1.0);
  const auto r = runDropout(selfGrid(), x, dy, 0, keep);
  Index dropped = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const bool kept = r.first.data()[i] != 0.0;
    dropped += kept ? 0 : 1;
    EXPECT_EQ(r.first.data()[i], kept ? x.data()[i] * (1 / keep) : 0.0);
    EXPECT_EQ(r.second.data()[i], kept ? dy.data()[i] * (1 / keep) : 0.0);
  }
  const double fraction = double(dropped) / double(x.size());
  EXPECT_NEAR(fraction, 1 - keep, 0.08) << dropped << " of " << x.size() << " dropped";
}

// The mask is the hash Dropout.hpp documents: element (c, d, h, w) of global sample s is kept
// iff DropoutMask::kept(rowKey(s, (c*D + d)*H + h), w), the prefix mixing the seed, the FNV-1a
// hash of the layer's name and the step. Rows longer than a host vector loop, so that its
// column counter and its remainder are both checked against the definition, bit for bit.
TEST(Dropout, MaskIsTheHashOfGlobalIndices) {
  const Index3 e{2, 3, 37};
  const int N = 2, C = 2;
  const double keep = 0.75;
  const std::uint64_t seed = 42, step = 7;
  const Index first = 5;
  const std::string name = "conv_dropout";
  Dropout<double, TestDevice> layer(selfGrid(), name, {N, C, e}, {keep, seed});
  layer.setStep(std::int64_t(step), first);
  const BlockDecomposition& dec = layer.inputDecomposition();
  auto xt = createDistTensor<double, TestDevice>("x", N, C, dec, selfGrid().coords(),
                                                 {{1, 0, 0}, {0, 2, 1}});
  auto yt = createDistTensor<double, TestDevice>("y", N, C, dec, selfGrid().coords(),
                                                 GhostWidths::uniform(1));
  const auto x = randomGlobal<double>("x", N, C, e, 10, 0.5, 1.0);  // no zeros
  scatterFromGlobal(x, xt);
  layer.forward(Exec(), xt, yt);
  const auto y = gatherToGlobal(yt, selfGrid().spatialComm());

  std::uint64_t layerKey = 0xcbf29ce484222325ull;
  for (unsigned char ch : name) layerKey = (layerKey ^ ch) * 0x100000001b3ull;
  Impl::DropoutMask mask;
  mask.prefix = Impl::splitmix64(Impl::splitmix64(Impl::splitmix64(seed) ^ layerKey) ^ step);
  mask.threshold = Impl::DropoutMask::thresholdOf(keep);
  Index wrong = 0, dropped = 0;
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (Index d = 0; d < e[0]; ++d)
        for (Index h = 0; h < e[1]; ++h)
          for (Index w = 0; w < e[2]; ++w) {
            const bool kept =
                mask.kept(mask.rowKey(first + n, (c * e[0] + d) * e[1] + h), std::uint32_t(w));
            dropped += kept ? 0 : 1;
            wrong += y(n, c, d, h, w) == (kept ? x(n, c, d, h, w) * (1 / keep) : 0.0) ? 0 : 1;
          }
  EXPECT_EQ(wrong, 0) << "of " << y.size() << " elements";
  EXPECT_GT(dropped, 0);
}

TEST(Dropout, FeatureMaskDependsOnGlobalSampleOnly) {
  // Rows of a [N, F] view: the row of global sample s gets the same mask whether it is
  // local row 0 of a rank with firstGlobalSample = s or row s of a rank starting at 0.
  const int F = 40, N = 4;
  Dropout<double, TestDevice> all(selfGrid(), "fc2_dropout", {N, F, {1, 1, 1}}, {0.5, 9});
  Dropout<double, TestDevice> one(selfGrid(), "fc2_dropout", {1, F, {1, 1, 1}}, {0.5, 9});
  Dropout<double, TestDevice> other(selfGrid(), "fc3_dropout", {N, F, {1, 1, 1}}, {0.5, 9});
  all.setStep(3, 0);
  other.setStep(3, 0);
  const FeatureView<double, TestDevice> x("x", N, F), y("y", N, F), y1("y1", 1, F), yo("yo", N, F);
  Kokkos::deep_copy(x, 1.0);
  all.forward(Exec(), x, y);
  other.forward(Exec(), x, yo);
  EXPECT_GT(maxRelativeError(hostCopy(yo), hostCopy(y)), 0.0) << "two layers share a mask";
  for (int s = 0; s < N; ++s) {
    one.setStep(3, s);
    one.forward(Exec(), rows(x, s, 1), y1);
    EXPECT_EQ(maxRelativeError(hostCopy(y1), hostCopy(rows(y, s, 1))), 0.0) << "sample " << s;
  }
  // A different step gives a different mask.
  all.setStep(4, 0);
  all.forward(Exec(), x, yo);
  EXPECT_GT(maxRelativeError(hostCopy(yo), hostCopy(y)), 0.0) << "steps share a mask";
}

TEST(Dropout, KeepOneAndInferenceAreTheIdentity) {
  const auto x = randomGlobal<double>("x", kBatch, kChannels, kExtents, 8);
  const auto dy = randomGlobal<double>("dy", kBatch, kChannels, kExtents, 9);
  const auto r = runDropout(selfGrid(), x, dy, 0, 1.0);
  expectSameArray(r.first, x, 0.0, "keep 1 output");
  expectSameArray(r.second, dy, 0.0, "keep 1 grad_input");

  Dropout<double, TestDevice> layer(selfGrid(), "d", {3, 5, {1, 1, 1}}, {0.5, 1});
  layer.setTraining(false);
  const FeatureView<double, TestDevice> xf = randomFeatures("xf", 3, 5, 1), yf("yf", 3, 5);
  layer.forward(Exec(), xf, yf);
  EXPECT_EQ(maxRelativeError(hostCopy(yf), hostCopy(xf)), 0.0);
}

TEST(Dropout, RefusesKeepProbabilityOutsideZeroOne) {
  for (double keep : {0.0, -0.5, 1.5}) {
    try {
      Dropout<double, TestDevice> layer(selfGrid(), "fc1_dropout", {2, 3, {1, 1, 1}}, {keep, 0});
      ADD_FAILURE() << "keep " << keep << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("fc1_dropout"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("keep"), std::string::npos) << e.what();
    }
  }
}

// The mask hashes a row's global columns in 16 bits: a wider volume would repeat it along W.
TEST(Dropout, RefusesWidthAbove65536) {
  Dropout<double, TestDevice> widest(selfGrid(), "d", {1, 1, {1, 1, 65536}}, {0.5, 0});
  try {
    Dropout<double, TestDevice> layer(selfGrid(), "wide_dropout", {1, 1, {1, 1, 65537}}, {0.5, 0});
    ADD_FAILURE() << "width 65537 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("wide_dropout"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("65537"), std::string::npos) << e.what();
  }
}

// y = [a, b] on channels and da, db = the matching channels of dy, with different ghosts on
// every tensor; checked against the global arrays directly.
TEST(Concat, ConcatenatesChannelsOnEveryGrid) {
  const int ran = forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const int Ca = 2, Cb = 3;
    const auto a = randomGlobal<double>("a", kBatch, Ca, kExtents, 1 + grid.group());
    const auto b = randomGlobal<double>("b", kBatch, Cb, kExtents, 2 + grid.group());
    const auto dy = randomGlobal<double>("dy", kBatch, Ca + Cb, kExtents, 3 + grid.group());
    const Concat<double, TestDevice> layer(grid, "dec3_concat", {kBatch, Ca, kExtents},
                                           {kBatch, Cb, kExtents});
    EXPECT_EQ(layer.outputShape().channels, Ca + Cb);
    const BlockDecomposition& dec = layer.outputDecomposition();
    auto at = createDistTensor<double, TestDevice>("a", kBatch, Ca, dec, grid.coords(),
                                                   GhostWidths::uniform(1));
    auto bt = createDistTensor<double, TestDevice>("b", kBatch, Cb, dec, grid.coords());
    auto yt = createDistTensor<double, TestDevice>("y", kBatch, Ca + Cb, dec, grid.coords(),
                                                   {{0, 1, 0}, {1, 0, 2}});
    auto dyt = createDistTensor<double, TestDevice>("dy", kBatch, Ca + Cb, dec, grid.coords(),
                                                    GhostWidths::uniform(1));
    auto dat = createDistTensor<double, TestDevice>("da", kBatch, Ca, dec, grid.coords(),
                                                    {{0, 0, 1}, {0, 0, 0}});
    auto dbt = createDistTensor<double, TestDevice>("db", kBatch, Cb, dec, grid.coords(),
                                                    GhostWidths::uniform(2));
    scatterFromGlobal(a, at);
    scatterFromGlobal(b, bt);
    scatterFromGlobal(dy, dyt);
    layer.forward(Exec(), at, bt, yt);
    layer.backward(Exec(), dyt, dat, dbt);
    const auto y = gatherToGlobal(yt, grid.spatialComm());
    const auto da = gatherToGlobal(dat, grid.spatialComm());
    const auto db = gatherToGlobal(dbt, grid.spatialComm());
    using P = Kokkos::pair<int, int>;
    auto channels = [](const GlobalArray<double>& t, int c0, int c1) {
      GlobalArray<double> s("s", t.extent(0), c1 - c0, t.extent(2), t.extent(3), t.extent(4));
      Kokkos::deep_copy(
          s, Kokkos::subview(t, Kokkos::ALL, P(c0, c1), Kokkos::ALL, Kokkos::ALL, Kokkos::ALL));
      return s;
    };
    expectSameArray(channels(y, 0, Ca), a, 0.0, "y[:Ca]");
    expectSameArray(channels(y, Ca, Ca + Cb), b, 0.0, "y[Ca:]");
    expectSameArray(da, channels(dy, 0, Ca), 0.0, "da");
    expectSameArray(db, channels(dy, Ca, Ca + Cb), 0.0, "db");
  });
  EXPECT_GE(ran, 1);
}

TEST(Concat, RefusesInputsWithDifferentExtents) {
  try {
    Concat<double, TestDevice> layer(selfGrid(), "dec2_concat", {2, 4, {8, 8, 8}},
                                     {2, 4, {8, 8, 4}});
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dec2_concat"), std::string::npos) << e.what();
  }
}

// The element-wise layers check their tensors with their SpatialGeometry: one message format
// naming the layer, the tensor's role and label, and what differs (layers/SpatialGeometry.hpp).
TEST(ElementwiseLayers, RefuseTensorsOfAnotherShapeNamingLayerAndRole) {
  const ProcessGrid& grid = selfGrid();
  const BlockDecomposition dec(kExtents, grid.dims());
  auto tensor = [&](const char* label, int channels) {
    return createDistTensor<double, TestDevice>(label, kBatch, channels, dec, grid.coords(),
                                                GhostWidths::uniform(1));
  };
  const auto good = tensor("x", kChannels), bad = tensor("wide", kChannels + 1);

  const LeakyReLU<double, TestDevice> relu(grid, "conv1_act", {kBatch, kChannels, kExtents});
  const std::string r = errorOf([&] { relu.forward(Exec(), bad, good); });
  EXPECT_NE(r.find("LeakyReLU 'conv1_act': input tensor 'wide' is 2x4x"), std::string::npos) << r;
  EXPECT_NE(r.find("expected 2x3x"), std::string::npos) << r;

  const Dropout<double, TestDevice> dropout(grid, "drop", {kBatch, kChannels, kExtents}, {0.5, 0});
  const std::string d = errorOf([&] { dropout.backwardData(Exec(), good, bad); });
  EXPECT_NE(d.find("Dropout 'drop': input gradient tensor 'wide'"), std::string::npos) << d;

  const Concat<double, TestDevice> concat(grid, "cat", {kBatch, 2, kExtents},
                                          {kBatch, kChannels, kExtents});
  EXPECT_EQ(concat.inputShape().channels, 2);
  EXPECT_EQ(concat.inputShapeB().channels, kChannels);
  const auto a = tensor("a", 2), y = tensor("y", 2 + kChannels);
  EXPECT_EQ(errorOf([&] { concat.forward(Exec(), a, good, y); }), "");
  const std::string c = errorOf([&] { concat.forward(Exec(), a, bad, y); });
  EXPECT_NE(c.find("Concat 'cat': second input tensor 'wide' is 2x4x"), std::string::npos) << c;
  EXPECT_NE(c.find("expected 2x3x"), std::string::npos) << c;
}

}  // namespace
}  // namespace hybrid3d::test
