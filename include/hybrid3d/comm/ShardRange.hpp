#pragma once
/// \file
/// The contiguous part of an n-element buffer that rank r of P owns when a buffer replicated
/// over P ranks is sharded (reduce-scatter of gradients, optimizer state, all-gather of
/// parameters: train/ReplicatedStateShards.hpp): the first n mod P ranks own one element more,
/// so the parts differ by at most one element and cover the buffer in rank order.

#include <cstddef>
#include <vector>

namespace hybrid3d {

struct ShardRange {
  std::size_t begin = 0;
  std::size_t count = 0;
  std::size_t end() const { return begin + count; }
};

inline ShardRange shardRange(std::size_t n, int rank, int ranks) {
  const std::size_t p = static_cast<std::size_t>(ranks), r = static_cast<std::size_t>(rank);
  const std::size_t base = n / p, extra = n % p;
  return {r * base + (r < extra ? r : extra), base + (r < extra ? 1 : 0)};
}

/// Every rank's count, in rank order (MPI's recvcounts of a reduce-scatter or an all-gather).
inline std::vector<int> shardCounts(std::size_t n, int ranks) {
  std::vector<int> counts;
  for (int r = 0; r < ranks; ++r) counts.push_back(static_cast<int>(shardRange(n, r, ranks).count));
  return counts;
}

/// Every rank's first element, in rank order (an all-gather's displacements).
inline std::vector<int> shardOffsets(std::size_t n, int ranks) {
  std::vector<int> offsets;
  for (int r = 0; r < ranks; ++r)
    offsets.push_back(static_cast<int>(shardRange(n, r, ranks).begin));
  return offsets;
}

}  // namespace hybrid3d
