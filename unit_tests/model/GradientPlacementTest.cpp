// The placement of buffers by their lives (model/GradientPlacement.hpp): two buffers alive at
// the same time never share a byte, every offset is aligned, the arena holds every buffer and
// no more than the buffers on their own; a chain of layers (CosmoFlow's shape) needs only its
// largest pair of neighbouring gradients; and the edge-order bookkeeping of placeGradients
// gives dL/d(output) and every edge their own places.
#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include <hybrid3d/model/GradientPlacement.hpp>

namespace hybrid3d::test {
namespace {

std::size_t roundUp(std::size_t bytes) {
  return (bytes + gradientAlignment - 1) / gradientAlignment * gradientAlignment;
}

void expectDisjointWhileAlive(const std::vector<BufferLife>& b, const std::vector<std::size_t>& at,
                              std::size_t arena) {
  ASSERT_EQ(at.size(), b.size());
  std::size_t sum = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(at[i] % gradientAlignment, 0u) << "buffer " << i;
    EXPECT_LE(at[i] + b[i].bytes, arena) << "buffer " << i;
    sum += roundUp(b[i].bytes);
    for (std::size_t j = 0; j < i; ++j) {
      const bool alive = b[i].first <= b[j].last && b[j].first <= b[i].last;
      const bool shared = at[i] < at[j] + b[j].bytes && at[j] < at[i] + b[i].bytes;
      EXPECT_FALSE(alive && shared) << "buffers " << j << " and " << i << " overlap while alive";
    }
  }
  EXPECT_LE(arena, sum);
}

TEST(GradientPlacement, BuffersAliveTogetherNeverShareMemory) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<BufferLife> b(60);
    for (BufferLife& l : b) {
      l.first = int(random() % 40);
      l.last = l.first + int(random() % 10);
      l.bytes = random() % 5000;  // some empty, most not multiples of the alignment
    }
    std::size_t arena = 0;
    const std::vector<std::size_t> at = placeByLifetime(b, gradientAlignment, arena);
    expectDisjointWhileAlive(b, at, arena);
  }
}

// Layers 0 -> 1 -> ... -> n-1: edge p -> p+1 lives from layer p+1's backward to layer p's, so
// only neighbouring edges (and the last with dL/d(output)) are alive together. With gradients
// that shrink with depth (CosmoFlow's shape) the arena is the largest pair of neighbours.
TEST(GradientPlacement, AShrinkingChainNeedsOnlyItsLargestPairOfNeighbours) {
  std::mt19937 random(3);
  const int n = 12;
  std::vector<std::size_t> sizes(n);  // the edges, then dL/d(output)
  for (std::size_t& s : sizes) s = 1000 + random() % 100000;
  std::sort(sizes.rbegin(), sizes.rend());
  GradientEdges chain;
  chain.consumers.resize(n);
  chain.bytes.resize(n);
  for (int p = 0; p + 1 < n; ++p) {
    chain.consumers[p] = {p + 1};
    chain.bytes[p] = {sizes[p]};
  }
  chain.outputGradientBytes = sizes.back();
  for (std::size_t& s : sizes) s = roundUp(s);
  std::size_t pair = 0, separate = chain.outputGradientBytes;
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) pair = std::max(pair, sizes[i] + sizes[i + 1]);
  for (int p = 0; p + 1 < n; ++p) separate += chain.bytes[p][0];
  const GradientPlacement placed = placeGradients(chain);
  EXPECT_EQ(placed.arenaBytes, pair);
  EXPECT_EQ(placed.separateBytes, separate);
}

// A skip connection: layer 0 feeds 1 and 3, and 3 reads 2 as well (U-Net's concat). Both edges
// out of 0 live until 0's backward, so they and the edges alive meanwhile get places of their own.
TEST(GradientPlacement, EdgesIntoOneProducerLiveUntilItsBackward) {
  GradientEdges g;
  g.consumers = {{1, 3}, {2}, {3}, {}};
  g.bytes = {{1000, 2000}, {3000}, {4000}, {}};
  g.outputGradientBytes = 500;
  const GradientPlacement placed = placeGradients(g);
  const int n = 4;
  auto at = [&](int node) { return 2 * n - 1 - node; };
  const std::vector<BufferLife> lives = {{1000, at(1), at(0)},
                                         {2000, at(3), at(0)},
                                         {3000, at(2), at(1)},
                                         {4000, at(3), at(2)},
                                         {500, n - 1, at(3)}};
  const std::vector<std::size_t> offsets = {placed.offsets[0][0], placed.offsets[0][1],
                                            placed.offsets[1][0], placed.offsets[2][0],
                                            placed.outputGradientOffset};
  expectDisjointWhileAlive(lives, offsets, placed.arenaBytes);
  EXPECT_LT(placed.arenaBytes, placed.separateBytes);
}

TEST(GradientPlacement, RefusesEdgesThatDoNotPointForward) {
  GradientEdges g;
  g.consumers = {{0}};
  g.bytes = {{8}};
  EXPECT_ANY_THROW(placeGradients(g));
  g.consumers = {{1}, {}};
  EXPECT_ANY_THROW(placeGradients(g));  // two nodes, one list of sizes
}

}  // namespace
}  // namespace hybrid3d::test
