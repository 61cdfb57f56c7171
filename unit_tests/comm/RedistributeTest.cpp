// The redistribution between layer grids (comm/Redistribute.hpp) on random pairs of layouts of
// one or two spatial groups: uneven extents, extents smaller than the grid (empty boxes), more
// sub-grids than samples and ranks in no sub-grid. Forward puts every owned cell of every
// sample where the destination layout owns it, and never writes a ghost; the adjoint is exact:
// <R x, y> = <x, R^T y> to 1e-13 for volumes, and for replicated features (the dense part) on
// the logical tensor, each sample's row counted once. Both ways of moving the cells: MPI's
// datatypes (host memory) and buffers packed by kernels (devices), here both on the host.
#include <random>

#include <gtest/gtest.h>

#include <hybrid3d/comm/Redistribute.hpp>

#include "GridCases.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

using T = double;
using Tensor = DistTensor<T, TestDevice>;

// A distinct value per (global sample, channel, voxel).
T cellValue(int sample, Index c, Index d, Index h, Index w, const Index3& e) {
  return T(1 + (((sample * 3 + c) * e[0] + d) * e[1] + h) * e[2] + w);
}

// A uniformly random value per cell from a hash of (seed, sample, channel, voxel): the same on
// every layout, so a tensor's global content is fixed whatever the grid.
T randomValue(unsigned seed, int sample, Index c, Index d, Index h, Index w) {
  std::uint64_t k = seed * 0x9e3779b97f4a7c15ull;
  for (Index v : {Index(sample), c, d, h, w}) {
    k ^= std::uint64_t(v) + 0x9e3779b97f4a7c15ull + (k << 6) + (k >> 2);
    k *= 0xbf58476d1ce4e5b9ull;
  }
  return T(double(k >> 11) / double(1ull << 53) - 0.5);
}

// Every local cell of `t` (ghosts too) set by `value(sample, c, d, h, w)` for owned cells and
// `ghost` elsewhere; `t` lives on `grid`, its local sample n being the group's groupSample(n).
template <class F>
void fill(const Tensor& t, const LayerGrid& grid, int firstSample, F&& value, T ghost) {
  auto h = Kokkos::create_mirror_view(t.view());
  const Box3 local = t.localBox(), own = t.owned();
  for (int n = 0; n < t.batch(); ++n)
    for (int c = 0; c < t.channels(); ++c)
      for (Index d = local.lo[0]; d < local.hi[0]; ++d)
        for (Index y = local.lo[1]; y < local.hi[1]; ++y)
          for (Index x = local.lo[2]; x < local.hi[2]; ++x) {
            const bool owned = own.contains(Box3{{d, y, x}, {d + 1, y + 1, x + 1}});
            h(n, c, t.localIndex(0, d), t.localIndex(1, y), t.localIndex(2, x)) =
                owned ? value(firstSample + grid.groupSample(n), c, d, y, x) : ghost;
          }
  Kokkos::deep_copy(t.view(), h);
}

// Sum over this rank's owned cells of a * b (a and b of one layout, any ghosts), reduced over
// `world`.
double dot(const Tensor& a, const Tensor& b, MPI_Comm world) {
  auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.view());
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b.view());
  const Box3 own = a.owned();
  double s = 0;
  for (int n = 0; n < a.batch(); ++n)
    for (int c = 0; c < a.channels(); ++c)
      for (Index d = own.lo[0]; d < own.hi[0]; ++d)
        for (Index y = own.lo[1]; y < own.hi[1]; ++y)
          for (Index x = own.lo[2]; x < own.hi[2]; ++x)
            s += double(ha(n, c, a.localIndex(0, d), a.localIndex(1, y), a.localIndex(2, x))) *
                 double(hb(n, c, b.localIndex(0, d), b.localIndex(1, y), b.localIndex(2, x)));
  MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, world);
  return s;
}

Tensor tensorOn(const LayerGrid& g, const char* label, int groupBatch, int channels,
                const Index3& extents, const GhostWidths& ghosts) {
  return createDistTensor<T, TestDevice>(label, g.localBatch(groupBatch), channels,
                                         BlockDecomposition(extents, g.dims()), g.coords(), ghosts);
}

// A random sub-grid shape of at most P ranks.
Int3 randomGrid(std::mt19937& rng, int P) {
  for (;;) {
    const Int3 g{1 + int(rng() % 4), 1 + int(rng() % 3), 1 + int(rng() % 2)};
    if (g[0] * g[1] * g[2] <= P) return g;
  }
}

struct Case {
  Int3 from, to;
  Index3 extents;
  int batch;
};

// Cases drawn alike on every rank (one seed): random grids, extents from 1 (empty boxes) to 9.
std::vector<Case> randomCases(int P, int count) {
  std::mt19937 rng(1234);
  std::vector<Case> cases;
  for (int i = 0; i < count; ++i) {
    Case c;
    c.from = randomGrid(rng, P);
    c.to = randomGrid(rng, P);
    c.extents = {1 + Index(rng() % 9), 1 + Index(rng() % 6), 1 + Index(rng() % 5)};
    c.batch = 1 + int(rng() % 5);
    cases.push_back(c);
  }
  return cases;
}

// The spatial grids the cases run in, one and two groups.
std::vector<GridCase> groupCases() {
  return {{{1, 1, 1}, 1}, {{2, 1, 1}, 1}, {{3, 1, 1}, 1}, {{2, 2, 1}, 1},
          {{2, 1, 1}, 2}, {{2, 2, 2}, 1}, {{4, 1, 1}, 2}};
}

template <bool Packed>
void expectForwardPutsEveryCellWhereTheDestinationOwnsItAndTheAdjointIsExact() {
  const int C = 2;
  int checked = 0;
  const int ran = forEachGrid(groupCases(), [&](const ProcessGrid& pg, const GridCase&) {
    LayerGridSet grids(pg);
    for (const Case& c : randomCases(pg.spatialSize(), 24)) {
      SCOPED_TRACE(toString(c.from) + " -> " + toString(c.to) + " extents " + toString(c.extents) +
                   " batch " + std::to_string(c.batch));
      const LayerGrid& a = grids.at(c.from);
      const LayerGrid& b = grids.at(c.to);
      const int first = pg.group() * c.batch;
      Redistribute<T, TestDevice, Packed> r(a, b, {c.batch, C, c.extents}, false, "test");
      const Tensor x = tensorOn(a, "x", c.batch, C, c.extents, GhostWidths::uniform(1));
      const Tensor y = tensorOn(b, "y", c.batch, C, c.extents, GhostWidths{{0, 1, 0}, {2, 0, 1}});
      const Index3 e = c.extents;
      auto cells = [&](int s, Index ch, Index d, Index h, Index w) {
        return cellValue(s, ch, d, h, w, e);
      };
      fill(x, a, first, cells, T(-7));
      fill(
          y, b, first, [](int, Index, Index, Index, Index) { return T(0); }, T(-9));
      TestExecSpace exec;
      r.forward(exec, x, y);
      exec.fence();
      // Every owned cell of y is the cell of its global sample; its ghosts are untouched.
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y.view());
      const Box3 local = y.localBox(), own = y.owned();
      std::size_t wrong = 0;
      for (int n = 0; n < y.batch(); ++n)
        for (int ch = 0; ch < C; ++ch)
          for (Index d = local.lo[0]; d < local.hi[0]; ++d)
            for (Index yy = local.lo[1]; yy < local.hi[1]; ++yy)
              for (Index w = local.lo[2]; w < local.hi[2]; ++w) {
                const bool owned = own.contains(Box3{{d, yy, w}, {d + 1, yy + 1, w + 1}});
                const T want = owned ? cells(first + b.groupSample(n), ch, d, yy, w) : T(-9);
                wrong +=
                    h(n, ch, y.localIndex(0, d), y.localIndex(1, yy), y.localIndex(2, w)) != want;
              }
      EXPECT_EQ(wrong, 0u);

      // <R u, v> = <u, R^T v> with random u on a, v on b.
      const Tensor u = tensorOn(a, "u", c.batch, C, e, GhostWidths::uniform(1));
      const Tensor ru = tensorOn(b, "Ru", c.batch, C, e, {});
      const Tensor v = tensorOn(b, "v", c.batch, C, e, GhostWidths::uniform(2));
      const Tensor rtv = tensorOn(a, "RTv", c.batch, C, e, GhostWidths{{1, 0, 0}, {0, 0, 1}});
      auto randomOf = [](unsigned seed) {
        return [seed](int s, Index ch, Index d, Index h, Index w) {
          return randomValue(seed, s, ch, d, h, w);
        };
      };
      fill(u, a, first, randomOf(1), T(100));
      fill(v, b, first, randomOf(2), T(100));
      r.forward(exec, u, ru);
      r.adjoint(exec, v, rtv);
      exec.fence();
      const double left = dot(ru, v, pg.worldComm()), right = dot(u, rtv, pg.worldComm());
      EXPECT_NEAR(left, right, 1e-13 * std::max(1.0, std::abs(left)));
      ++checked;
    }
  });
  EXPECT_GT(ran, 0);
  EXPECT_GT(checked, 0);
}

TEST(Redistribute, ForwardPutsEveryCellWhereTheDestinationOwnsItAndTheAdjointIsExact) {
  expectForwardPutsEveryCellWhereTheDestinationOwnsItAndTheAdjointIsExact<false>();
}
TEST(Redistribute, PackedForwardPutsEveryCellWhereTheDestinationOwnsItAndTheAdjointIsExact) {
  expectForwardPutsEveryCellWhereTheDestinationOwnsItAndTheAdjointIsExact<true>();
}

// Features [N, F] replicated on every rank of a sub-grid: after forward every rank of a
// destination sub-grid holds its samples' rows; the adjoint brings back, to every rank of a
// source sub-grid, the rows one rank of the destination holds (the logical map is the identity
// on the samples, so is its adjoint).
template <bool Packed>
void expectReplicatedFeaturesReachEveryRankOfTheDestinationSubGrid() {
  constexpr int F = 5;
  const int ran = forEachGrid(groupCases(), [&](const ProcessGrid& pg, const GridCase&) {
    LayerGridSet grids(pg);
    for (const Case& c : randomCases(pg.spatialSize(), 16)) {
      SCOPED_TRACE(toString(c.from) + " -> " + toString(c.to) + " batch " +
                   std::to_string(c.batch));
      const LayerGrid& a = grids.at(c.from);
      const LayerGrid& b = grids.at(c.to);
      const int first = pg.group() * c.batch;
      Redistribute<T, TestDevice, Packed> r(a, b, {c.batch, F, {1, 1, 1}}, true, "features");
      auto rows = [&](const LayerGrid& g, int batch, const char* label) {
        return createDistTensor<T, TestDevice>(label, g.localBatch(batch), F,
                                               BlockDecomposition({1, 1, 1}, {1, 1, 1}), {0, 0, 0});
      };
      const Tensor x = rows(a, c.batch, "x"), y = rows(b, c.batch, "y");
      const Tensor back = rows(a, c.batch, "back");
      auto value = [](int s, Index f, Index, Index, Index) { return T(1 + s * 100 + f); };
      fill(x, a, first, value, T(0));
      TestExecSpace exec;
      r.forward(exec, x, y);
      r.adjoint(exec, y, back);
      exec.fence();
      for (const auto* t : {&y, &back}) {
        const LayerGrid& g = t == &y ? b : a;
        auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), t->view());
        for (int n = 0; n < t->batch(); ++n)
          for (int f = 0; f < F; ++f)
            EXPECT_EQ(h(n, f, 0, 0, 0), value(first + g.groupSample(n), f, 0, 0, 0));
      }
    }
  });
  EXPECT_GT(ran, 0);
}

TEST(Redistribute, ReplicatedFeaturesReachEveryRankOfTheDestinationSubGrid) {
  expectReplicatedFeaturesReachEveryRankOfTheDestinationSubGrid<false>();
}
TEST(Redistribute, PackedReplicatedFeaturesReachEveryRankOfTheDestinationSubGrid) {
  expectReplicatedFeaturesReachEveryRankOfTheDestinationSubGrid<true>();
}

}  // namespace
}  // namespace hybrid3d::test
