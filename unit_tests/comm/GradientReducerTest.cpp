#include <gtest/gtest.h>

#include <hybrid3d/comm/GradientReducer.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>

#include "GridCases.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

// Layers 0..3, layer 3 without parameters (it starts nothing). Stage forced on runs the
// staged path (pinned host copies on a GPU) on the host too. One reducer serves three steps,
// as in training: its sums are set up once and started again each step (PersistentSum). With
// ReduceTo::Shards each rank's sum() holds its part (comm/ShardRange.hpp) of the world sum,
// gradients shorter than the world included (ranks with an empty part).
template <bool Stage>
void everyGradientEndsAsTheWorldSum(ReduceTo to = ReduceTo::Whole) {
  const int rank = worldRank(), size = worldSize();
  using V = Kokkos::View<double*, TestDevice>;
  std::vector<std::vector<V>> layers = {
      {V("a", 5), V("b", 3)}, {V("c", 7)}, {V("d", 1), V("e", 2)}, {}};
  const TestExecSpace exec;
  std::vector<std::vector<ScopedGradient<double, TestDevice>>> scoped;
  for (const auto& l : layers) {
    scoped.emplace_back();
    for (const V& v : l) scoped.back().push_back({v, GradientScope::World});
  }
  GradientReducer<double, TestDevice, Stage> reducer(MPI_COMM_WORLD, MPI_COMM_WORLD, scoped, to);
  for (int step = 0; step < 3; ++step) {
    // Gradient number `salt` of this step holds step * 1000 + salt * 100 + 10 rank + i.
    int salt = 0;
    for (auto& l : layers)
      for (auto& v : l) {
        auto h = Kokkos::create_mirror_view(v);
        ++salt;
        for (std::size_t i = 0; i < h.size(); ++i)
          h(i) = step * 1000 + salt * 100 + rank * 10 + double(i);
        Kokkos::deep_copy(v, h);
      }
    // backward order: last layer first
    for (std::size_t l : {3u, 2u, 0u, 1u}) reducer.start(exec, l);
    reducer.finish(exec);
    exec.fence();
    salt = 0;
    for (auto& l : layers)
      for (auto& v : l) {
        ++salt;
        const ShardRange part =
            to == ReduceTo::Shards ? shardRange(v.size(), rank, size) : ShardRange{0, v.size()};
        auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), reducer.sum(v));
        ASSERT_EQ(h.size(), part.count) << "gradient " << salt;
        for (std::size_t k = 0; k < h.size(); ++k) {  // the sum over ranks r of the above
          const double i = double(part.begin + k);
          EXPECT_EQ(h(k), size * (step * 1000 + salt * 100 + i) + 10.0 * size * (size - 1) / 2)
              << "step " << step << ", gradient " << salt << ", element " << i;
        }
      }
  }
}

TEST(GradientReducer, EveryGradientEndsAsTheWorldSumWhateverTheStartOrder) {
  everyGradientEndsAsTheWorldSum<mpiStagesThroughHost<TestDevice>>();
}

TEST(GradientReducer, StagedThroughHostBuffersEveryGradientEndsAsTheWorldSum) {
  everyGradientEndsAsTheWorldSum<true>();
}

TEST(GradientReducer, ReducedToShardsEachRankHoldsItsPartOfTheWorldSum) {
  everyGradientEndsAsTheWorldSum<mpiStagesThroughHost<TestDevice>>(ReduceTo::Shards);
}

TEST(GradientReducer, StagedThroughHostBuffersReducedToShardsEachRankHoldsItsPart) {
  everyGradientEndsAsTheWorldSum<true>(ReduceTo::Shards);
}

TEST(ShardRange, PartsDifferByAtMostOneAndCoverTheBufferInRankOrder) {
  for (std::size_t n : {0, 1, 5, 16, 17})
    for (int ranks : {1, 2, 3, 8}) {
      std::size_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const ShardRange p = shardRange(n, r, ranks);
        EXPECT_EQ(p.begin, next) << n << " over " << ranks << ", rank " << r;
        EXPECT_LE(p.count, n / ranks + 1);
        EXPECT_GE(p.count, n / ranks);
        EXPECT_EQ(shardCounts(n, ranks)[r], int(p.count));
        EXPECT_EQ(shardOffsets(n, ranks)[r], int(p.begin));
        next = p.end();
      }
      EXPECT_EQ(next, n) << n << " over " << ranks;
    }
}

// A gradient scoped to the data-parallel groups is summed over the ranks at the same spatial
// position only, a world-scoped one over the world; a one-rank scope is not reduced at all, and
// bytesPerStep counts exactly what is handed to MPI.
TEST(GradientReducer, EachGradientIsSummedOverItsScopeAndOnlyThoseBytesAreCounted) {
  const ProcessGrid grid(MPI_COMM_WORLD, {worldSize() % 2 == 0 ? 2 : 1, 1, 1});
  const int rank = worldRank(), size = worldSize(), G = grid.numGroups();
  using V = Kokkos::View<double*, TestDevice>;
  const V world("world", 5), data("data", 3);
  Kokkos::deep_copy(world, double(rank));
  Kokkos::deep_copy(data, double(rank));
  {
    GradientReducer<double, TestDevice> reducer(
        grid.worldComm(), grid.dataComm(),
        {{{world, GradientScope::World}, {data, GradientScope::DataParallel}}});
    EXPECT_EQ(reducer.bytesPerStep(), sizeof(double) * ((size > 1 ? 5 : 0) + (G > 1 ? 3 : 0)));
    reducer.start(0);
    reducer.finish();
  }
  double dataSum = 0;  // the world ranks at this spatial position
  for (int r = 0; r < size; ++r)
    if (r % grid.spatialSize() == grid.spatialRank()) dataSum += r;
  int check = 0;
  MPI_Allreduce(&rank, &check, 1, MPI_INT, MPI_SUM, grid.dataComm());
  ASSERT_EQ(double(check), dataSum) << "the data communicator is not rank % P";
  const auto w = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), world);
  const auto d = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), data);
  for (std::size_t i = 0; i < w.size(); ++i) EXPECT_EQ(w(i), size * (size - 1) / 2.0);
  for (std::size_t i = 0; i < d.size(); ++i) EXPECT_EQ(d(i), dataSum);
}

// An error on one rank after it started a reduction destroys its reducer while the exception
// unwinds. The destructor must not wait for the peers: here they join only once the failing
// rank is back from its error (as in a run, where they wait in some other collective). Without
// core/Unwinding.hpp's rule the failing rank blocks in ~GradientReducer and the test hangs.
TEST(GradientReducer, DestroyedByAnErrorItDoesNotWaitForThePeers) {
  const int rank = worldRank(), size = worldSize(), failing = 0;
  using V = Kokkos::View<double*, TestDevice>;
  std::vector<std::vector<V>> layers = {{V("g", 4)}};
  Kokkos::deep_copy(layers[0][0], 1.0);
  bool cameBack = false;
  try {
    GradientReducer<double, TestDevice> reducer(MPI_COMM_WORLD, layers);
    if (rank == failing) {
      reducer.start(0);
      throw Error("injected error on one rank");
    }
    MPI_Barrier(MPI_COMM_WORLD);  // until the failing rank is back from its error
    reducer.start(0);             // then join its abandoned reduction
    reducer.finish();
  } catch (const Error&) {
    cameBack = true;
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Barrier(MPI_COMM_WORLD);  // the abandoned reduction progresses here, on kept buffers
  EXPECT_EQ(cameBack, rank == failing);
  if (rank != failing) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), layers[0][0]);
    for (std::size_t i = 0; i < h.size(); ++i) EXPECT_EQ(h(i), double(size));
  }
}

}  // namespace
}  // namespace hybrid3d::test
