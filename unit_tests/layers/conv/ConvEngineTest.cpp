// Every convolution engine computes what the kokkos engine in double computes on one rank:
// output, input gradient and weight and bias gradients, on every grid (uneven, 1-voxel-thin,
// empty boxes, two groups), with and without ghosts on the output, in float at float rounding
// (and the cudnn engine in double at double rounding). The onednn and cudnn cases exist only
// in builds that hold those engines (the cudnn ones run on a GPU).
// Also: which engine `auto` picks, and the refusals.
#include <gtest/gtest.h>

#include <hybrid3d/layers/Conv3d.hpp>

#include "ConvHarness.hpp"
#include "ConvTimers.hpp"
#include "GridCases.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

using FloatConv3d = Conv3d<float, TestDevice>;
using DoubleConv3d = Conv3d<double, TestDevice>;

std::vector<GridCase> engineGrids() {
  std::vector<GridCase> cases;
  for (const Int3& g :
       std::vector<Int3>{{1, 1, 1}, {2, 1, 1}, {1, 1, 2}, {1, 2, 2}, {2, 2, 2}, {3, 1, 1}})
    for (int groups : {1, 2}) cases.push_back({g, groups});
  return cases;
}

struct EngineCase {
  int batch, cin, cout, k, s, p;
  bool bias;
  Index3 extents;
  GhostWidths outGhosts;
  std::string name() const {
    return std::to_string(cin) + "->" + std::to_string(cout) + " k" + std::to_string(k) + " s" +
           std::to_string(s) + " p" + std::to_string(p) + (bias ? " bias " : " ") +
           toString(extents) + (outGhosts.none() ? "" : " ghosted y");
  }
};

// The CosmoFlow and U-Net shapes in small: 4 input channels (conv1), 16 and more (blocked
// layouts), stride 2, 1^3 heads, a 5^3 kernel; thin and empty boxes on the 3-rank grids.
std::vector<EngineCase> engineCases() {
  const GhostWidths one = GhostWidths::uniform(1);
  return {
      {1, 4, 16, 3, 1, 1, false, {6, 5, 4}, {}},
      {2, 16, 32, 3, 1, 1, false, {5, 4, 6}, one},
      {2, 3, 5, 3, 1, 1, true, {7, 6, 5}, {}},
      {1, 16, 16, 3, 2, 1, true, {7, 6, 5}, {}},
      {2, 3, 4, 3, 2, 1, false, {8, 7, 6}, one},
      {2, 5, 3, 1, 1, 0, true, {4, 3, 5}, {}},
      {1, 2, 3, 5, 1, 2, false, {6, 6, 6}, {}},
      {1, 3, 17, 3, 1, 1, true, {3, 2, 2}, {}},   // 1-voxel-thin on 3x1x1 and 2x2x2
      {2, 3, 4, 3, 1, 1, false, {2, 5, 4}, one},  // an empty box on 3x1x1
  };
}

// `engine` in scalar T on every grid against the kokkos engine in double on one rank, to
// `tolerance` relative to the largest entry.
template <class T = float>
void expectEngineMatchesKokkosDouble(ConvEngine engine, double tolerance = 5e-6) {
  const int ran = forEachGrid(engineGrids(), [&](const ProcessGrid& grid, const GridCase&) {
    for (const EngineCase& c : engineCases()) {
      expectSameAsOneRank<Conv3d<T, TestDevice>, DoubleConv3d>(
          grid, {c.batch, c.cin, c.extents}, convOptions<T>(c, engine),
          convOptions<double>(c, ConvEngine::Kokkos), c.outGhosts, tolerance,
          std::string(toString(engine)) + " " + c.name());
    }
  });
  EXPECT_GE(ran, 1);
}

TEST(Conv3dEngine, KokkosFloatMatchesOneRankDoubleOnEveryGrid) {
  expectEngineMatchesKokkosDouble(ConvEngine::Kokkos);
}

TEST(Conv3dEngine, AutoMatchesOneRankKokkosDoubleOnEveryGrid) {
  // What a model runs by default: per pass, what auto measured fastest on this machine.
  expectEngineMatchesKokkosDouble(ConvEngine::Auto);
}

// Which passes run the direct host kernels (kernels/ConvForwardHost.hpp, ConvWeightsHost.hpp):
// "forward and backward-weights", "backward-weights", "forward" or "" (none).
template <class Layer>
std::string directHostPasses(const Layer& layer) {
  const bool forward = layer.passEngine(ConvPass::Forward) == ConvCandidate::Direct;
  const bool weights = layer.passEngine(ConvPass::BackwardWeights) == ConvCandidate::Direct;
  EXPECT_NE(layer.passEngine(ConvPass::BackwardData), ConvCandidate::Direct);
  return forward && weights ? "forward and backward-weights"
         : weights          ? "backward-weights"
         : forward          ? "forward"
                            : "";
}

TEST(Conv3dEngine, DirectHostKernelsMatchKokkosDoubleOnWideRows) {
  // The engine cases' rows are narrower than one 8-lane vector: here rows of 16-voxel blocks,
  // single vectors and tails, output channels not a multiple of the kernels' block of 4, the
  // widest layer each kernel takes, W cut in two and three, ghosted y and dy, two samples, and
  // the forward's interior and shell parts when the halo exchange is overlapped. Auto is given
  // times that make the direct kernels the fastest wherever they run.
  if (!Impl::convWeightsHostCanRun<float, TestDevice>(3, 1, 4))
    GTEST_SKIP() << "needs float on host memory and a CPU with AVX2 and FMA";
  const std::vector<GridCase> grids{{{1, 1, 1}, 1}, {{1, 1, 2}, 1}, {{1, 1, 3}, 1}, {{2, 1, 1}, 2}};
  const GhostWidths one = GhostWidths::uniform(1);
  const std::vector<EngineCase> cases{
      {1, 4, 6, 3, 1, 1, true, {4, 3, 45}, {}},
      {2, 3, 5, 3, 1, 1, false, {3, 4, 17}, one},
      {1, 32, 3, 3, 1, 1, true, {3, 3, 9}, {}},
  };
  const int ran = forEachGrid(grids, [&](const ProcessGrid& grid, const GridCase&) {
    for (const EngineCase& c : cases)
      for (const bool overlap : {false, true}) {
        auto o = convOptions<float>(c, ConvEngine::Auto);
        o.overlap = overlap;
        o.timer = favouring(ConvCandidate::Direct);
        const std::string what =
            c.name() + (overlap ? " overlapped" : "") + " on " + toString(grid.dims());
        const FloatConv3d probe(grid, "probe", {c.batch, c.cin, c.extents}, o);
        const std::string how = probe.engineDescription();
        EXPECT_EQ(directHostPasses(probe), c.cin <= Impl::convForwardHostMaxCin
                                               ? "forward and backward-weights"
                                               : "backward-weights")
            << what << ": " << how;
        expectSameAsOneRank<FloatConv3d, DoubleConv3d>(grid, {c.batch, c.cin, c.extents}, o,
                                                       convOptions<double>(c, ConvEngine::Kokkos),
                                                       c.outGhosts, 5e-6, what);
      }
  });
  EXPECT_GE(ran, 1);
}

TEST(Conv3dEngine, DirectHostKernelsOnlyWhereTheyRun) {
  // Asked for by name, an engine runs every pass itself; to auto, the direct kernels are no
  // candidate for double, strided layers, other kernels and wide layers (even when given the
  // best times).
  const bool host = Impl::convWeightsHostCanRun<float, TestDevice>(3, 1, 4);
  const auto passes = [](const auto& layer) { return directHostPasses(layer); };
  const TensorShape in{1, 4, {6, 6, 6}};
  FloatConv3d::Options o;
  o.outChannels = 8;
  o.timer = favouring(ConvCandidate::Direct);
  EXPECT_EQ(passes(FloatConv3d(selfGrid(), "c", in, o)),
            host ? "forward and backward-weights" : "");
  EXPECT_EQ(passes(FloatConv3d(selfGrid(), "c", {1, 5, {6, 6, 6}}, o)),
            host ? "backward-weights" : "");
  o.engine = ConvEngine::Kokkos;
  EXPECT_EQ(passes(FloatConv3d(selfGrid(), "c", in, o)), "");
  o.engine = ConvEngine::Auto;
  o.stride = 2;
  EXPECT_EQ(passes(FloatConv3d(selfGrid(), "c", in, o)), "");
  o.stride = 1;
  o.kernel = 5;
  o.padding = 2;
  EXPECT_EQ(passes(FloatConv3d(selfGrid(), "c", in, o)), "");
  o.kernel = 3;
  o.padding = 1;
  EXPECT_EQ(
      passes(FloatConv3d(selfGrid(), "c", {1, int(Impl::convWeightsHostMaxCin) + 1, {6, 6, 6}}, o)),
      "");
  DoubleConv3d::Options od;
  od.outChannels = 8;
  od.timer = favouring(ConvCandidate::Direct);
  EXPECT_EQ(passes(DoubleConv3d(selfGrid(), "c", in, od)), "");
}

TEST(Conv3dEngine, DirectHostBackwardWeightsRefusesMoreInputChannelsThanItHolds) {
  // Its partial sums are sized for convWeightsHostMaxCin; a caller past the rule gets an error,
  // not an overrun.
  if (!Impl::hostHasAvx2Fma()) GTEST_SKIP() << "needs a CPU with AVX2 and FMA";
  float v = 1, dw = 0;
  Impl::ConvWeightsHostProblem p;
  p.batch = p.cout = p.od = p.oh = p.ow = 1;
  p.cin = Impl::convWeightsHostMaxCin + 1;
  p.x = &v;
  p.y = &v;
  p.dw = &dw;
  EXPECT_THROW(Impl::convWeightsHost(Kokkos::DefaultHostExecutionSpace(), p), Error);
  EXPECT_EQ(dw, 0.0f);
}

#if HYBRID3D_ENABLE_ONEDNN
TEST(Conv3dEngine, OneDnnMatchesOneRankKokkosDoubleOnEveryGrid) {
  if (!oneDnnCanRun<float, TestDevice>()) GTEST_SKIP() << "device memory space";
  expectEngineMatchesKokkosDouble(ConvEngine::OneDnn);
}

TEST(Conv3dEngine, OneDnnRunsTwiceWithTheSameResult) {
  // The engine caches reorders per operand layout: a second step (and a step with other
  // ghost widths in between) must not see stale state.
  if (!oneDnnCanRun<float, TestDevice>()) GTEST_SKIP() << "device memory space";
  FloatConv3d::Options o;
  o.outChannels = 16;
  o.engine = ConvEngine::OneDnn;
  const TensorShape in{1, 16, {6, 5, 4}};
  const auto x = randomGlobal<double>("x", 1, 16, in.extents, 5);
  const auto dy = randomGlobal<double>("dy", 1, 16, in.extents, 6);
  const ConvResult first = runConv<FloatConv3d>(selfGrid(), in, o, x, dy, 3);
  const ConvResult ghosted =
      runConv<FloatConv3d>(selfGrid(), in, o, x, dy, 3, GhostWidths::uniform(2));
  expectSameArray(ghosted.y, first.y, 0.0, "output with ghosted y");
  expectSameArray(ghosted.dx, first.dx, 0.0, "grad_input with ghosted dy");
}

TEST(Conv3dEngine, OneDnnBackwardDataAsAForwardConvolutionMatchesKokkosDouble) {
  // Stride-1 layers with few input channels on boxes of 32^3 output voxels and more compute
  // backward-data as a forward convolution with flipped weights (src/layers/
  // OneDnnConvolution.cpp): boxes the cases above are too small for. Every rank's box here is
  // large enough, the interior of an overlapped one too (it sums its part into dx).
  if (!oneDnnCanRun<float, TestDevice>()) GTEST_SKIP() << "device memory space";
  const std::vector<GridCase> grids{{{1, 1, 1}, 1}, {{2, 1, 1}, 1}};
  const std::vector<EngineCase> cases{
      {1, 4, 8, 3, 1, 1, false, {66, 34, 34}, {}},
      {1, 3, 5, 3, 1, 1, true, {66, 34, 34}, GhostWidths::uniform(1)},
  };
  const int ran = forEachGrid(grids, [&](const ProcessGrid& grid, const GridCase&) {
    for (const EngineCase& c : cases)
      for (const bool overlap : {false, true}) {
        auto o = convOptions<float>(c, ConvEngine::OneDnn);
        o.overlap = overlap;
        const std::string what =
            c.name() + (overlap ? " overlapped" : "") + " on " + toString(grid.dims());
        const std::string how =
            Conv3d<float, TestDevice>(grid, "probe", {c.batch, c.cin, c.extents}, o)
                .engineDescription();
        EXPECT_NE(how.find("as a forward convolution"), std::string::npos) << what << ": " << how;
        expectSameAsOneRank<Conv3d<float, TestDevice>, DoubleConv3d>(
            grid, {c.batch, c.cin, c.extents}, o, convOptions<double>(c, ConvEngine::Kokkos),
            c.outGhosts, 2e-5, what);  // float weight gradients: sums over 76,296 voxels
      }
  });
  EXPECT_GE(ran, 1);
}
#endif

#if HYBRID3D_ENABLE_CUDNN
TEST(Conv3dEngine, CudnnMatchesOneRankKokkosDoubleOnEveryGrid) {
  if (!cudnnCanRun<float, TestDevice>()) GTEST_SKIP() << "host memory space";
  expectEngineMatchesKokkosDouble(ConvEngine::Cudnn);
}

TEST(Conv3dEngine, CudnnInDoubleMatchesOneRankKokkosDoubleOnEveryGrid) {
  if (!cudnnCanRun<double, TestDevice>()) GTEST_SKIP() << "host memory space";
  expectEngineMatchesKokkosDouble<double>(ConvEngine::Cudnn, 1e-11);
}

TEST(Conv3dEngine, CudnnChoosesAgainForAnOutputWithGhosts) {
  // Algorithms are chosen at set-up for an output without ghosts; a call with a ghosted y and
  // dy describes the new layouts and chooses again, and the results stay the same.
  if (!cudnnCanRun<float, TestDevice>()) GTEST_SKIP() << "host memory space";
  FloatConv3d::Options o;
  o.outChannels = 16;
  o.bias = true;
  o.engine = ConvEngine::Cudnn;
  const TensorShape in{2, 16, {6, 5, 4}};
  const auto x = randomGlobal<double>("x", 2, 16, in.extents, 5);
  const auto dy = randomGlobal<double>("dy", 2, 16, in.extents, 6);
  const ConvResult plain = runConv<FloatConv3d>(selfGrid(), in, o, x, dy, 3);
  const ConvResult ghosted =
      runConv<FloatConv3d>(selfGrid(), in, o, x, dy, 3, GhostWidths::uniform(2));
  expectSameArray(ghosted.y, plain.y, 5e-6, "output with ghosted y");
  expectSameArray(ghosted.dx, plain.dx, 5e-6, "grad_input with ghosted dy");
  for (std::size_t i = 0; i < plain.grads.size(); ++i)
    EXPECT_LE(maxRelativeError(ghosted.grads[i], plain.grads[i]), 5e-6) << "gradient " << i;
}
#endif

TEST(Conv3dEngine, AutoTakesTheFastestCandidateOfEachPass) {
  // Given times that favour one candidate, auto takes it for every pass it can run, and the
  // engine it holds is the vendor one only where some pass runs that.
  constexpr ConvCandidate vendor = oneDnnCanRun<float, TestDevice>()  ? ConvCandidate::OneDnn
                                   : cudnnCanRun<float, TestDevice>() ? ConvCandidate::Cudnn
                                                                      : ConvCandidate::Kokkos;
  FloatConv3d::Options o;
  o.outChannels = 2;
  const TensorShape in{1, 2, {4, 4, 3}};  // below the plan's oneDnnMinOutputVoxels guess
  o.timer = favouring(vendor);
  const FloatConv3d byVendor(selfGrid(), "c", in, o);
  for (int p = 0; p < convPassCount; ++p) EXPECT_EQ(byVendor.passEngine(ConvPass(p)), vendor) << p;
  EXPECT_EQ(byVendor.engine(), vendor == ConvCandidate::OneDnn  ? ConvEngine::OneDnn
                               : vendor == ConvCandidate::Cudnn ? ConvEngine::Cudnn
                                                                : ConvEngine::Kokkos);
  EXPECT_NE(byVendor.engineDescription().find("[given]"), std::string::npos);
  o.timer = favouring(ConvCandidate::Kokkos);
  const FloatConv3d byKokkos(selfGrid(), "c", in, o);
  for (int p = 0; p < convPassCount; ++p)
    EXPECT_EQ(byKokkos.passEngine(ConvPass(p)), ConvCandidate::Kokkos) << p;
  EXPECT_EQ(byKokkos.engine(), ConvEngine::Kokkos);
  // Double on host memory: the kokkos engine is its only candidate. A named engine: no times.
  DoubleConv3d::Options od;
  od.outChannels = 2;
  const bool cudnnDouble = cudnnCanRun<double, TestDevice>();
  od.timer = favouring(cudnnDouble ? ConvCandidate::Cudnn : ConvCandidate::OneDnn);
  EXPECT_EQ(DoubleConv3d(selfGrid(), "c", in, od).engine(),
            cudnnDouble ? ConvEngine::Cudnn : ConvEngine::Kokkos);
  od.engine = ConvEngine::Kokkos;
  const DoubleConv3d named(selfGrid(), "c", in, od);
  EXPECT_EQ(named.engine(), ConvEngine::Kokkos);
  EXPECT_FALSE(std::isfinite(named.passTimes()[0][0]));
}

TEST(Conv3dEngine, CudnnIsRefusedWhereItCannotRunNamingTheLayer) {
  // Not built in: every memory space. Built in: host memory.
  try {
    resolveConvEngine<float, Kokkos::HostSpace>(ConvEngine::Cudnn, "conv7", 64, 64);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string want = HYBRID3D_ENABLE_CUDNN
                                 ? "conv7: convolution engine cudnn computes float and double on "
                                   "CUDA device memory (CudaSpace) only; this layer is float on "
                                   "Host"
                                 : "conv7: convolution engine cudnn is not built in";
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
}

TEST(Conv3dEngine, OneDnnForDoubleIsRefusedNamingTheLayer) {
  DoubleConv3d::Options o;
  o.outChannels = 2;
  o.engine = ConvEngine::OneDnn;
  try {
    DoubleConv3d(selfGrid(), "conv7", {1, 2, {4, 4, 4}}, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv7: convolution engine onednn"), std::string::npos)
        << e.what();
  }
}

TEST(Conv3dEngine, DeckNamesParse) {
  EXPECT_EQ(parseConvEngine("auto"), ConvEngine::Auto);
  EXPECT_EQ(parseConvEngine("kokkos"), ConvEngine::Kokkos);
  EXPECT_EQ(parseConvEngine("onednn"), ConvEngine::OneDnn);
  EXPECT_EQ(parseConvEngine("cudnn"), ConvEngine::Cudnn);
  EXPECT_THROW(parseConvEngine("mkl"), Error);
}

}  // namespace
}  // namespace hybrid3d::test
