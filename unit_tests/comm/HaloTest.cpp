#include <random>

#include <gtest/gtest.h>

#include <hybrid3d/comm/Halo.hpp>
#include <hybrid3d/core/Error.hpp>

#include "GridCases.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

template <class T>
class HaloTest : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(HaloTest, Scalars);

// A distinct positive value for every (group, n, c, voxel), exact in float (< 2^24).
template <class T>
T globalValue(int group, Index n, Index c, Index d, Index h, Index w, const Index3& e) {
  return static_cast<T>(1 + (((group * 2 + n) * 3 + c) * e[0] + d) * e[1] * e[2] + h * e[2] + w);
}

std::vector<GhostWidths> ghostCases() {
  return {GhostWidths::uniform(1), GhostWidths::uniform(2),
          GhostWidths{{0, 0, 0}, {1, 1, 1}},   // high side only (stride 2)
          GhostWidths{{1, 0, 2}, {0, 2, 1}}};  // different per side and dimension
}

// Widths that change from rank to rank along every dimension, each within the neighbour's
// extent (as a strided window's on an uneven split): the rank at coordinate k has lo k % 3 and
// hi (k + 1) % 2 + 1, cut to what the neighbours own.
GhostMap perRankWidths(const BlockDecomposition& dec) {
  GhostMap m(dec.dims());
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < dec.dims()[i]; ++k) {
      const Index below = k > 0 ? dec.extent(i, k - 1) : 2;
      const Index above = k + 1 < dec.dims()[i] ? dec.extent(i, k + 1) : 2;
      m.set(i, k, int(std::min<Index>(k % 3, below)), int(std::min<Index>((k + 1) % 2 + 1, above)));
    }
  return m;
}

// Fill the owned box with globalValue and the ghosts with a sentinel; gather; then every local
// cell holds globalValue inside the domain and zero outside, on every rank.
template <class T>
void checkGatherFillsGhosts(const ProcessGrid& grid, const Index3& extents, const GhostMap& g) {
  const int N = 2, C = 3;
  const BlockDecomposition dec(extents, grid.dims());
  auto t = createDistTensor<T, TestDevice>("x", N, C, dec, grid.coords(), g);
  auto h = Kokkos::create_mirror_view(t.view());
  const Box3 local = t.localBox();
  const Box3& own = t.owned();
  auto inside = [](const Box3& b, Index d, Index hh, Index w) {
    return d >= b.lo[0] && d < b.hi[0] && hh >= b.lo[1] && hh < b.hi[1] && w >= b.lo[2] &&
           w < b.hi[2];
  };
  const int group = grid.group();
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (Index d = local.lo[0]; d < local.hi[0]; ++d)
        for (Index hh = local.lo[1]; hh < local.hi[1]; ++hh)
          for (Index w = local.lo[2]; w < local.hi[2]; ++w)
            h(n, c, t.localIndex(0, d), t.localIndex(1, hh), t.localIndex(2, w)) =
                inside(own, d, hh, w) ? globalValue<T>(group, n, c, d, hh, w, extents) : T(-7);
  Kokkos::deep_copy(t.view(), h);

  auto halo = createHalo(grid, t, "test");
  halo->gather(typename DistTensor<T, TestDevice>::execution_space(), t);
  Kokkos::deep_copy(h, t.view());

  const Box3 domain = dec.globalBox();
  Index wrong = 0;
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (Index d = local.lo[0]; d < local.hi[0]; ++d)
        for (Index hh = local.lo[1]; hh < local.hi[1]; ++hh)
          for (Index w = local.lo[2]; w < local.hi[2]; ++w) {
            const T want =
                inside(domain, d, hh, w) ? globalValue<T>(group, n, c, d, hh, w, extents) : T(0);
            const T got = h(n, c, t.localIndex(0, d), t.localIndex(1, hh), t.localIndex(2, w));
            if (got != want && wrong++ < 5)
              ADD_FAILURE() << "rank " << grid.worldRank() << " voxel (" << d << "," << hh << ","
                            << w << ") n=" << n << " c=" << c << ": got " << got << ", want "
                            << want;
          }
  EXPECT_EQ(wrong, 0);
}
template <class T>
void checkGatherFillsGhosts(const ProcessGrid& grid, const Index3& extents, const GhostWidths& g) {
  checkGatherFillsGhosts<T>(grid, extents,
                            uniformGhosts(BlockDecomposition(extents, grid.dims()), g));
}

TYPED_TEST(HaloTest, GhostsMatchOwnersOnUnevenGrids) {
  const int ran = forEachGrid(standardGridCases(), [](const ProcessGrid& grid, const GridCase&) {
    for (const GhostWidths& g : ghostCases()) checkGatherFillsGhosts<TypeParam>(grid, {7, 6, 5}, g);
  });
  EXPECT_GE(ran, 1);
}

TYPED_TEST(HaloTest, GhostsMatchOwnersOnOneVoxelThinSubdomains) {
  // Every rank owns a single voxel along D and H: width 1 reaches exactly the neighbour, and
  // width 2 is legal on up to 2 ranks per dimension, where its far half is zero padding.
  forEachGrid(standardGridCases(), [](const ProcessGrid& grid, const GridCase& c) {
    const Index3 e{c.spatial[0], c.spatial[1], c.spatial[2] + 1};
    checkGatherFillsGhosts<TypeParam>(grid, e, GhostWidths::uniform(1));
    if (c.spatial[0] <= 2 && c.spatial[1] <= 2 && c.spatial[2] <= 2)
      checkGatherFillsGhosts<TypeParam>(grid, e, GhostWidths::uniform(2));
    checkGatherFillsGhosts<TypeParam>(grid, e, GhostWidths{{1, 1, 0}, {0, 1, 1}});
  });
}

TYPED_TEST(HaloTest, EmptySubdomainsTakePartWithoutGhosts) {
  // Extents smaller than the grid: the last ranks along a dimension own nothing.
  forEachGrid(standardGridCases(), [](const ProcessGrid& grid, const GridCase&) {
    checkGatherFillsGhosts<TypeParam>(grid, {1, 1, 3}, GhostWidths::uniform(1));
  });
}

TYPED_TEST(HaloTest, ScatterAddIsTheAdjointOfGather) {
  // <gather(x), y> summed over all local cells of all ranks equals <x, scatterAdd(y)> summed
  // over owned cells, for random x and y: scatterAdd is exactly the transpose of gather.
  using T = TypeParam;
  forEachGrid(standardGridCases(), [](const ProcessGrid& grid, const GridCase&) {
    const BlockDecomposition dec({7, 6, 5}, grid.dims());
    std::vector<GhostMap> maps{perRankWidths(dec)};
    for (const GhostWidths& g : ghostCases()) maps.emplace_back(grid.dims(), g);
    for (const GhostMap& map : maps) {
      auto x = createDistTensor<T, TestDevice>("x", 2, 3, dec, grid.coords(), map);
      auto y = createDistTensor<T, TestDevice>("y", 2, 3, dec, grid.coords(), map);
      const GhostWidths& g = x.ghosts();
      // create_mirror (not _view): hy must keep the original y after scatterAdd changes y.
      auto hx = Kokkos::create_mirror(x.view());
      auto hy = Kokkos::create_mirror(y.view());
      std::mt19937 rng(1234 + grid.worldRank());
      std::uniform_real_distribution<double> u(-1, 1);
      for (std::size_t i = 0; i < hx.size(); ++i) hx.data()[i] = static_cast<T>(u(rng));
      for (std::size_t i = 0; i < hy.size(); ++i) hy.data()[i] = static_cast<T>(u(rng));
      Kokkos::deep_copy(x.view(), hx);
      Kokkos::deep_copy(y.view(), hy);

      auto halo = createHalo(grid, x, "adjoint");
      typename DistTensor<T, TestDevice>::execution_space exec;
      halo->gather(exec, x);
      halo->scatterAdd(exec, y);
      auto gx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x.view());
      auto sy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y.view());

      double lhs = 0, rhs = 0;
      for (std::size_t i = 0; i < gx.size(); ++i)
        lhs += double(gx.data()[i]) * double(hy.data()[i]);
      auto ox = Kokkos::subview(gx, Kokkos::ALL, Kokkos::ALL,
                                Kokkos::pair<Index, Index>(g.lo[0], g.lo[0] + x.owned().extent(0)),
                                Kokkos::pair<Index, Index>(g.lo[1], g.lo[1] + x.owned().extent(1)),
                                Kokkos::pair<Index, Index>(g.lo[2], g.lo[2] + x.owned().extent(2)));
      auto oy = Kokkos::subview(sy, Kokkos::ALL, Kokkos::ALL,
                                Kokkos::pair<Index, Index>(g.lo[0], g.lo[0] + x.owned().extent(0)),
                                Kokkos::pair<Index, Index>(g.lo[1], g.lo[1] + x.owned().extent(1)),
                                Kokkos::pair<Index, Index>(g.lo[2], g.lo[2] + x.owned().extent(2)));
      if (!x.owned().empty())
        for (std::size_t n = 0; n < ox.extent(0); ++n)
          for (std::size_t c = 0; c < ox.extent(1); ++c)
            for (std::size_t d = 0; d < ox.extent(2); ++d)
              for (std::size_t h = 0; h < ox.extent(3); ++h)
                for (std::size_t w = 0; w < ox.extent(4); ++w)
                  rhs += double(ox(n, c, d, h, w)) * double(oy(n, c, d, h, w));
      double sums[2] = {lhs, rhs}, total[2];
      MPI_Allreduce(sums, total, 2, MPI_DOUBLE, MPI_SUM, grid.worldComm());
      const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-13;
      EXPECT_NEAR(total[0], total[1], tol * (std::abs(total[0]) + 1.0));
      EXPECT_NE(total[0], 0.0);
    }
  });
}

TYPED_TEST(HaloTest, GhostsMatchOwnersWithPerRankWidths) {
  // Each rank's own widths, which differ from its neighbours': what a rank sends is cut with
  // the receiving neighbour's widths. Uneven, thin and empty boxes; an empty box right after
  // the last non-empty one (extents below the grid) has a low ghost, filled from that rank.
  forEachGrid(standardGridCases(), [](const ProcessGrid& grid, const GridCase& c) {
    for (const Index3& e :
         {Index3{7, 6, 5}, Index3{c.spatial[0], c.spatial[1], c.spatial[2] + 1}, Index3{1, 1, 3}})
      checkGatherFillsGhosts<TypeParam>(grid, e, perRankWidths(BlockDecomposition(e, grid.dims())));
  });
  // CosmoFlow's average pool (3/2/1) over D = 9 on 6 ranks: low widths 1,1,1,1,0,0 and high
  // 0,0,0,1,2,0 (issue 9's case, refused while every rank took the widest).
  const int ran = forEachGrid({{{6, 1, 1}, 1}}, [](const ProcessGrid& grid, const GridCase&) {
    GhostMap m(grid.dims());
    const int lo[6] = {1, 1, 1, 1, 0, 0}, hi[6] = {0, 0, 0, 1, 2, 0};
    for (int k = 0; k < 6; ++k) m.set(0, k, lo[k], hi[k]);
    m.set(1, 0, 1, 1);
    checkGatherFillsGhosts<TypeParam>(grid, {9, 3, 2}, m);
  });
  EXPECT_EQ(ran, worldSize() >= 6 ? 1 : 0);
}

TEST(Halo, AcceptsPerRankWidthsThatTheWidestRankWouldPushTooFar) {
  // Issue 9: D = 9 on 6 ranks owns 2,2,2,1,1,1. Rank 4 needs 2 high ghosts (voxel 8 on rank 5);
  // ranks 2 and 3 need 0 and 1. The widest width 2 on rank 2 would reach two ranks away.
  const BlockDecomposition dec({9, 1, 1}, {6, 1, 1});
  GhostMap m(dec.dims());
  const int lo[6] = {1, 1, 1, 1, 0, 0}, hi[6] = {0, 0, 0, 1, 2, 0};
  for (int k = 0; k < 6; ++k) m.set(0, k, lo[k], hi[k]);
  EXPECT_NO_THROW(checkGhostWidths(dec, m, "pool1"));
  try {
    checkGhostWidths(dec, GhostWidths{{1, 0, 0}, {2, 0, 0}}, "pool1");
    ADD_FAILURE() << "accepted width 2 on every rank";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pool1: ghost width 2 on the high side of D of rank 2 "
                                         "reaches past the neighbouring rank: extent 9 over 6 "
                                         "ranks leaves rank 3 of that dimension only 1 voxel(s)"),
              std::string::npos)
        << e.what();
  }
  // A per-rank width that does reach two ranks away is still refused, naming that rank.
  m.set(0, 3, 1, 2);
  try {
    checkGhostWidths(dec, m, "pool1");
    ADD_FAILURE() << "accepted rank 3's width 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ghost width 2 on the high side of D of rank 3"),
              std::string::npos)
        << e.what();
  }
  // A map for another grid is refused, not read out of bounds.
  EXPECT_THROW(checkGhostWidths(BlockDecomposition({9, 1, 1}, {3, 1, 1}), m, "pool1"), Error);
}

TEST(Halo, RefusesGhostsBeyondTheImmediateNeighbour) {
  // 7 over 4 ranks gives 2,2,2,1 voxels: a width of 3 reaches two ranks away.
  const BlockDecomposition dec({7, 5, 5}, {4, 1, 1});
  try {
    checkGhostWidths(dec, GhostWidths::uniform(3), "conv9");
    ADD_FAILURE() << "accepted width 3";
  } catch (const Error& e) {
    const std::string m = e.what();
    for (const char* part : {"conv9", "ghost width 3", "extent 7 over 4", "grid 4x1x1"})
      EXPECT_NE(m.find(part), std::string::npos) << m;
  }
  EXPECT_NO_THROW(checkGhostWidths(dec, GhostWidths::uniform(2), "ok"));
  // One-voxel-thin: width 2 needs two ranks on the inside, but only padding at the edge.
  const BlockDecomposition thin({4, 1, 1}, {4, 1, 1});
  EXPECT_THROW(checkGhostWidths(thin, GhostWidths::uniform(2), "thin"), Error);
  EXPECT_NO_THROW(checkGhostWidths(thin, GhostWidths::uniform(1), "thin"));
  EXPECT_NO_THROW(
      checkGhostWidths(BlockDecomposition({2, 1, 1}, {2, 1, 1}), GhostWidths::uniform(2), "edge"));
}

TEST(Halo, RefusesOnEveryRankOfARealGrid) {
  // The refusal is computed from global data, so all ranks throw and none waits in MPI.
  // One voxel per rank and width 3: on 3 ranks the first rank's ghosts span two neighbours.
  const int ran = forEachGrid({{{3, 1, 1}, 1}, {{1, 3, 2}, 1}, {{3, 1, 1}, 2}},
                              [](const ProcessGrid& grid, const GridCase& c) {
                                const Index3 e{c.spatial[0], c.spatial[1], c.spatial[2]};
                                const BlockDecomposition dec(e, grid.dims());
                                auto t = createDistTensor<float, TestDevice>(
                                    "x", 1, 1, dec, grid.coords(), GhostWidths::uniform(3));
                                bool threw = false;
                                try {
                                  createHalo(grid, t, "pool1");
                                } catch (const Error& e) {
                                  threw = std::string(e.what()).find("pool1: ghost width 3") !=
                                          std::string::npos;
                                }
                                EXPECT_TRUE(allTrue(threw, grid.worldComm()));
                              });
  EXPECT_EQ(ran, worldSize() >= 6 ? 3 : worldSize() >= 3 ? 1 : 0);
}

// The padding is zeroed by a tensor's first gather, not by every exchange (nothing else writes
// it): a value planted in the padding after the first gather survives the second, while a
// tensor the halo has not gathered yet gets its padding zeroed.
TEST(Halo, ZeroesATensorsPaddingAtItsFirstGatherOnly) {
  forEachGrid({{{1, 1, 1}, 1}, {{2, 1, 1}, 1}}, [](const ProcessGrid& grid, const GridCase&) {
    const BlockDecomposition dec({4, 3, 5}, grid.dims());
    const GhostWidths g = GhostWidths::uniform(1);
    auto a = createDistTensor<double, TestDevice>("a", 1, 2, dec, grid.coords(), g);
    auto b = createDistTensor<double, TestDevice>("b", 1, 2, dec, grid.coords(), g);
    auto halo = createHalo(grid, a, "h");
    const DistTensor<double, TestDevice>::execution_space exec;
    // Local cell (0, 0, 0, 0, 0) is a padding corner on every rank of these grids.
    auto corner = [](const DistTensor<double, TestDevice>& t) {
      return Kokkos::subview(t.view(), 0, 0, 0, 0, 0);
    };
    auto value = [&](const DistTensor<double, TestDevice>& t) {
      double v = 0;
      Kokkos::deep_copy(v, corner(t));
      return v;
    };
    halo->gather(exec, a);
    EXPECT_EQ(value(a), 0.0);
    Kokkos::deep_copy(corner(a), 5.0);
    halo->gather(exec, a);
    EXPECT_EQ(value(a), 5.0) << "the padding was zeroed again by the second gather";
    Kokkos::deep_copy(corner(b), 7.0);
    halo->gather(exec, b);
    EXPECT_EQ(value(b), 0.0) << "a tensor's first gather left its padding";
  });
}

TEST(Halo, RejectsATensorOfAnotherLayout) {
  forEachGrid({{{1, 1, 1}, 1}}, [](const ProcessGrid& grid, const GridCase&) {
    const BlockDecomposition dec({4, 4, 4}, grid.dims());
    auto a = createDistTensor<double, TestDevice>("a", 1, 2, dec, grid.coords(),
                                                  GhostWidths::uniform(1));
    auto b = createDistTensor<double, TestDevice>("b", 1, 3, dec, grid.coords(),
                                                  GhostWidths::uniform(1));
    auto halo = createHalo(grid, a, "h");
    EXPECT_THROW(halo->gather(DistTensor<double, TestDevice>::execution_space(), b), Error);
  });
}

}  // namespace
}  // namespace hybrid3d::test
