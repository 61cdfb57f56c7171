// A model graph on grids that were refused while every rank took the widest rank's ghost
// widths (issue 9): conv -> LeakyReLU -> average pool 3/2/1 -> conv, as CosmoFlow's first
// block, over extents whose stride-2 pool needs different widths on different ranks.
// Graph::finalize allocates every activation and gradient with each rank's own widths; the
// output, and the parameter gradients summed over the world, equal the 1-rank run.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/layers/Activation.hpp>
#include <hybrid3d/layers/AvgPool3d.hpp>
#include <hybrid3d/layers/Conv3d.hpp>
#include <hybrid3d/layers/Window.hpp>
#include <hybrid3d/model/Graph.hpp>
#include <hybrid3d/model/Nodes.hpp>

#include "GridCases.hpp"
#include "Invariance.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

using T = double;
using M = TestDevice;
constexpr EdgeKind V = EdgeKind::Volume;

struct Result {
  GlobalArray<T> output;
  std::vector<std::vector<double>> grads;  // summed over `sumOver`
};

int addConv(Graph<T, M>& g, const ProcessGrid& grid, const std::string& name, int in) {
  Conv3d<T, M>::Options c;
  c.outChannels = 3;
  c.kernel = 3;
  c.stride = 1;
  c.padding = 1;
  c.bias = true;
  return g.add(makeNode<Conv3d<T, M>, V, V, T, M>(grid, name, g.shape(in), c), {in});
}

// Forward with x, backward with dy (this group's samples) on `grid`.
Result run(const ProcessGrid& grid, const GlobalArray<T>& x, const GlobalArray<T>& dy,
           MPI_Comm sumOver) {
  const TensorShape in = shapeOf(x);
  Graph<T, M> g(grid, in);
  const int conv1 = addConv(g, grid, "conv1", Graph<T, M>::Input);
  const int act1 = g.add(
      makeNode<LeakyReLU<T, M>, V, V, T, M>(grid, "act1", g.shape(conv1), LeakyReLUOp{}), {conv1});
  const int pool1 = g.add(makeNode<AvgPool3d<T, M>, V, V, T, M>(grid, "pool1", g.shape(act1),
                                                                AvgPool3d<T, M>::Options{}),
                          {act1});
  addConv(g, grid, "conv2", pool1);
  g.finalize();
  std::mt19937_64 rng(7);  // the same parameters on every rank and grid
  std::uniform_real_distribution<double> u(-1, 1);
  for (const auto& p : g.parameters()) {
    auto h = Kokkos::create_mirror_view(p.param.value);
    for (std::size_t i = 0; i < h.size(); ++i) h.data()[i] = u(rng);
    Kokkos::deep_copy(p.param.value, h);
  }
  const TestExecSpace exec;
  scatterFromGlobal(x, g.input().volume);
  g.setTraining(true);
  g.zeroGradients(exec);
  g.forward(exec);
  scatterFromGlobal(dy, g.outputGradient().volume);
  g.backward(exec);
  Result r{gatherToGlobal(g.output().volume, grid.spatialComm()), {}};
  for (const auto& p : g.parameters()) {
    allreduceSum(p.param.grad, sumOver);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.param.grad);
    r.grads.emplace_back(h.data(), h.data() + h.size());
  }
  return r;
}

TEST(Models, GraphMatchesOneRankWhereOnlyPerRankGhostsFit) {
  const int ran =
      forEachGrid(perRankGhostGridCases(), [](const ProcessGrid& grid, const GridCase&) {
        const Index3 e = stridedWindowExtents(grid.dims());
        // The pool's input ghosts: the widest rank's would reach two ranks away on this grid.
        const Window w = Window::cubic(3, 2, 1);
        const BlockDecomposition in(e, grid.dims()), out(windowOutputExtents(e, w), grid.dims());
        EXPECT_TRUE(refusedByWidestRank(in, windowGhosts(in, out, w, "pool1")));

        const unsigned seed = 101 + 2 * grid.group();
        const auto x = randomGlobal<T>("x", 2, 2, e, seed);
        const auto dy = randomGlobal<T>("dy", 2, 3, out.globalExtents(), seed + 1);
        const Result got = run(grid, x, dy, grid.worldComm());
        const Result want = run(selfGrid(), x, dy, grid.dataComm());
        expectSameArray(got.output, want.output, 1e-12, "output");
        ASSERT_EQ(got.grads.size(), 4u);  // conv1 and conv2 weight and bias
        ASSERT_EQ(got.grads.size(), want.grads.size());
        for (std::size_t i = 0; i < got.grads.size(); ++i) {
          double diff = 0, scale = 0;
          for (std::size_t j = 0; j < want.grads[i].size(); ++j) {
            diff = std::max(diff, std::abs(got.grads[i][j] - want.grads[i][j]));
            scale = std::max(scale, std::abs(want.grads[i][j]));
          }
          EXPECT_GT(scale, 0.0) << "parameter gradient " << i
                                << " is zero: the test proves nothing";
          EXPECT_LE(diff, 1e-12 * scale) << "parameter gradient " << i;
        }
      });
  EXPECT_EQ(ran, worldSize() >= 8 ? 8 : worldSize() >= 4 ? 3 : 0);
}

}  // namespace
}  // namespace hybrid3d::test
