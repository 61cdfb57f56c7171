// Every convolution engine computes what the kokkos engine in double computes on one rank:
// output, input gradient and weight and bias gradients, on every grid (uneven, 1-voxel-thin,
// empty boxes, two groups), with and without ghosts on the output, in float at float rounding.
// Also: which engine `auto` picks, and the refusals.
#include <gtest/gtest.h>

#include <hybrid3d/layers/Conv3d.hpp>

#include "ConvHarness.hpp"
#include "GridCases.hpp"

namespace hybrid3d::test {
namespace {

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
      {1, 3, 17, 3, 1, 1, true, {3, 2, 2}, {}},  // 1-voxel-thin on 3x1x1 and 2x2x2
      {2, 3, 4, 3, 1, 1, false, {2, 5, 4}, one},  // an empty box on 3x1x1
  };
}

template <class T>
typename Conv3d<T>::Options optionsOf(const EngineCase& c, ConvEngine engine) {
  typename Conv3d<T>::Options o;
  o.outChannels = c.cout;
  o.kernel = c.k;
  o.stride = c.s;
  o.padding = c.p;
  o.bias = c.bias;
  o.engine = engine;
  return o;
}

void expectEngineMatchesKokkosDouble(ConvEngine engine) {
  const int ran = forEachGrid(engineGrids(), [&](const ProcessGrid& grid, const GridCase&) {
    for (const EngineCase& c : engineCases()) {
      expectSameAsOneRank<Conv3d<float>, Conv3d<double>>(
          grid, {c.batch, c.cin, c.extents}, optionsOf<float>(c, engine),
          optionsOf<double>(c, ConvEngine::Kokkos), c.outGhosts, 5e-6,
          std::string(toString(engine)) + " " + c.name());
    }
  });
  EXPECT_GE(ran, 1);
}

TEST(Conv3dEngine, KokkosFloatMatchesOneRankDoubleOnEveryGrid) {
  expectEngineMatchesKokkosDouble(ConvEngine::Kokkos);
}

#if HYBRID3D_ENABLE_ONEDNN
TEST(Conv3dEngine, OneDnnMatchesOneRankKokkosDoubleOnEveryGrid) {
  if (!oneDnnCanRun<float, DefaultMemorySpace>()) GTEST_SKIP() << "device memory space";
  expectEngineMatchesKokkosDouble(ConvEngine::OneDnn);
}

TEST(Conv3dEngine, OneDnnRunsTwiceWithTheSameResult) {
  // The engine caches reorders per operand layout: a second step (and a step with other
  // ghost widths in between) must not see stale state.
  if (!oneDnnCanRun<float, DefaultMemorySpace>()) GTEST_SKIP() << "device memory space";
  Conv3d<float>::Options o;
  o.outChannels = 16;
  o.engine = ConvEngine::OneDnn;
  const TensorShape in{1, 16, {6, 5, 4}};
  const auto x = randomGlobal<double>("x", 1, 16, in.extents, 5);
  const auto dy = randomGlobal<double>("dy", 1, 16, in.extents, 6);
  const ConvResult first = runConv<Conv3d<float>>(selfGrid(), in, o, x, dy, 3);
  const ConvResult ghosted =
      runConv<Conv3d<float>>(selfGrid(), in, o, x, dy, 3, GhostWidths::uniform(2));
  expectSameArray(ghosted.y, first.y, 0.0, "output with ghosted y");
  expectSameArray(ghosted.dx, first.dx, 0.0, "grad_input with ghosted dy");
}
#endif

TEST(Conv3dEngine, AutoPicksTheFastestBuiltEngine) {
  Conv3d<float>::Options o;
  o.outChannels = 2;
  const TensorShape in{1, 2, {4, 4, 4}};
  const ConvEngine wantFloat =
      oneDnnCanRun<float, DefaultMemorySpace>() ? ConvEngine::OneDnn : ConvEngine::Kokkos;
  EXPECT_EQ(Conv3d<float>(selfGrid(), "c", in, o).engine(), wantFloat);
  // A box below oneDnnMinOutputVoxels stays with the kokkos engine.
  EXPECT_EQ(Conv3d<float>(selfGrid(), "c", {1, 2, {4, 4, 3}}, o).engine(), ConvEngine::Kokkos);
  Conv3d<double>::Options od;
  od.outChannels = 2;
  EXPECT_EQ(Conv3d<double>(selfGrid(), "c", in, od).engine(), ConvEngine::Kokkos);
  od.engine = ConvEngine::Kokkos;
  EXPECT_EQ(Conv3d<double>(selfGrid(), "c", in, od).engine(), ConvEngine::Kokkos);
}

TEST(Conv3dEngine, OneDnnForDoubleIsRefusedNamingTheLayer) {
  Conv3d<double>::Options o;
  o.outChannels = 2;
  o.engine = ConvEngine::OneDnn;
  try {
    Conv3d<double>(selfGrid(), "conv7", {1, 2, {4, 4, 4}}, o);
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
  EXPECT_THROW(parseConvEngine("mkl"), Error);
}

}  // namespace
}  // namespace hybrid3d::test
