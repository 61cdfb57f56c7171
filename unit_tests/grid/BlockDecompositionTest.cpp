#include <gtest/gtest.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/grid/BlockDecomposition.hpp>
#include <hybrid3d/grid/DistTensor.hpp>

namespace hybrid3d::test {
namespace {

TEST(BlockDecomposition, BlocksTileTheExtentWithRemainderFirst) {
  for (Index n : {0, 1, 2, 5, 7, 8, 31, 64, 513})
    for (int p : {1, 2, 3, 4, 7, 8, 16}) {
      const BlockDecomposition dec({n, 1, 1}, {p, 1, 1});
      Index next = 0;
      for (int k = 0; k < p; ++k) {
        EXPECT_EQ(dec.begin(0, k), next) << n << " over " << p;
        const Index e = dec.extent(0, k);
        EXPECT_EQ(e, n / p + (k < n % p ? 1 : 0)) << n << " over " << p << " part " << k;
        for (Index i = dec.begin(0, k); i < dec.end(0, k); ++i) EXPECT_EQ(dec.ownerCoord(0, i), k);
        next += e;
      }
      EXPECT_EQ(next, n);
    }
}

TEST(BlockDecomposition, OwnedBoxesAreProductsOfOneDimensionalBlocks) {
  const BlockDecomposition dec({7, 6, 5}, {3, 1, 2});
  const Box3 b = dec.ownedBox({2, 0, 1});
  EXPECT_EQ(b.lo, (Index3{5, 0, 3}));
  EXPECT_EQ(b.hi, (Index3{7, 6, 5}));
  EXPECT_EQ(dec.ownedBox({0, 0, 0}).size(), 3 * 6 * 3);
  // More ranks than voxels: the last ranks own empty boxes.
  const BlockDecomposition thin({2, 1, 1}, {4, 1, 1});
  EXPECT_FALSE(thin.ownedBox({1, 0, 0}).empty());
  EXPECT_TRUE(thin.ownedBox({2, 0, 0}).empty());
}

TEST(BlockDecomposition, RejectsNegativeExtentsAndEmptyGrids) {
  EXPECT_THROW(BlockDecomposition({4, -1, 4}, {1, 1, 1}), Error);
  EXPECT_THROW(BlockDecomposition({4, 4, 4}, {1, 0, 1}), Error);
  EXPECT_THROW(BlockDecomposition({4, 0, 4}, {1, 1, 1}).ownerCoord(1, 0), Error);
}

TEST(DistTensor, LocalArrayIsOwnedBoxPlusAsymmetricGhosts) {
  const BlockDecomposition dec({7, 6, 5}, {3, 1, 2});
  const GhostWidths g{{1, 0, 2}, {0, 2, 1}};
  auto t = createDistTensor<double>("t", 2, 3, dec, {1, 0, 0}, g);
  EXPECT_EQ(t.owned().lo, (Index3{3, 0, 0}));
  EXPECT_EQ(t.view().extent(0), 2u);
  EXPECT_EQ(t.view().extent(1), 3u);
  EXPECT_EQ(t.view().extent(2), 2u + 1 + 0);
  EXPECT_EQ(t.view().extent(3), 6u + 0 + 2);
  EXPECT_EQ(t.view().extent(4), 3u + 2 + 1);
  EXPECT_EQ(t.localIndex(0, 3), 1);
  EXPECT_EQ(t.localIndex(2, 0), 2);
  EXPECT_EQ(t.localBox().lo, (Index3{2, 0, -2}));
  auto owned = t.ownedView();
  EXPECT_EQ(owned.extent(2), 2u);
  EXPECT_EQ(owned.extent(4), 3u);
  // An empty owned box that no consumer asks for ghosts holds nothing: the same widths on
  // every rank skip the dimension along which it is empty (its other widths grow no cell).
  const BlockDecomposition small({2, 4, 4}, {4, 1, 1});
  auto e = createDistTensor<float>("e", 1, 1, small, {3, 0, 0}, GhostWidths::uniform(1));
  EXPECT_EQ(e.view().size(), 0u);
  EXPECT_EQ(e.localBox().size(), 0);
  EXPECT_EQ(e.ghosts().lo[0] + e.ghosts().hi[0], 0);
  // One whose consumer reads the voxel below it (an up-sampling layer's) holds that voxel: the
  // empty box [2, 2) of rank 2 grown by one low ghost is [1, 2).
  GhostMap m(small.dims());
  m.set(0, 2, 1, 0);
  auto u = createDistTensor<float>("u", 1, 1, small, {2, 0, 0}, m);
  EXPECT_TRUE(u.owned().empty());
  EXPECT_EQ(u.localBox(), (Box3{{1, 0, 0}, {2, 4, 4}}));
  EXPECT_EQ(u.view().extent(2), 1u);
  EXPECT_EQ(u.localIndex(0, 1), 0);
  EXPECT_THROW(createDistTensor<float>("bad", 1, 1, small, {4, 0, 0}), Error);
}

TEST(DistTensor, SixtyFourBitIndicesForLargeVolumes) {
  // 512^3 x 16 channels has more than 2^31 elements: extents and sizes must not overflow.
  const BlockDecomposition dec({512, 512, 512}, {1, 1, 1});
  const Box3 b = dec.ownedBox({0, 0, 0});
  EXPECT_EQ(b.size() * 16, Index(1) << 31);
}

}  // namespace
}  // namespace hybrid3d::test
