#include "impl/CheckpointParts.hpp"

#include <algorithm>
#include <climits>
#include <cstring>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>

namespace hybrid3d::Impl {

namespace {

// A hyperslab block (HDF5's start, stride, count, block, one entry per dimension).
struct Block {
  std::vector<hsize_t> start, stride, count, block;
};

// The blocks of a selection, gathered before it is built (selected()).
class Selection {
public:
  void add(const std::vector<hsize_t>& start, const std::vector<hsize_t>& stride,
           const std::vector<hsize_t>& count, const std::vector<hsize_t>& block) {
    blocks_.push_back({start, stride, count, block});
  }
  // Blocks of `count` elements (no stride).
  void add(const std::vector<hsize_t>& start, const std::vector<hsize_t>& count) {
    const std::vector<hsize_t> ones(start.size(), 1);
    add(start, ones, ones, count);
  }
  const std::vector<Block>& blocks() const { return blocks_; }

private:
  std::vector<Block> blocks_;
};

hid_t checked(hid_t id) {
  if (id < 0) fail("checkpoint: HDF5 cannot select a part of a dataset");
  return id;
}

// A copy of `space` with one block selected.
hid_t selectedBlock(hid_t space, const Block& b) {
  const hid_t s = checked(H5Scopy(space));
  if (H5Sselect_hyperslab(s, H5S_SELECT_SET, b.start.data(), b.stride.data(), b.count.data(),
                          b.block.data()) < 0) {
    H5Sclose(s);
    checked(-1);
  }
  return s;
}

// A copy of `space` with the union of `blocks` selected (none when there are none), merged
// pairwise: HDF5 merges a union's spans anew at each addition, so adding blocks one by one
// costs the square of their number, a balanced tree of unions their number times its depth.
hid_t selected(hid_t space, const std::vector<Block>& blocks) {
  if (blocks.empty()) {
    const hid_t s = checked(H5Scopy(space));
    H5Sselect_none(s);
    return s;
  }
  std::vector<hid_t> level;
  for (const Block& b : blocks) level.push_back(selectedBlock(space, b));
  while (level.size() > 1) {
    std::vector<hid_t> next;
    for (std::size_t i = 0; i + 1 < level.size(); i += 2) {
      next.push_back(H5Scombine_select(level[i], H5S_SELECT_OR, level[i + 1]));
      H5Sclose(level[i]);
      H5Sclose(level[i + 1]);
    }
    if (level.size() % 2 == 1) next.push_back(level.back());
    level.swap(next);
    for (hid_t s : level)
      if (s < 0) {
        for (hid_t t : level)
          if (t >= 0) H5Sclose(t);
        checked(-1);
      }
  }
  return level[0];
}

// Global row-major elements [a, b) of a tensor of `dims`, as few blocks as the shape allows:
// each step takes the coarsest whole sub-blocks that start at `a`, as many as fit in their
// dimension and in the range.
void selectFlat(Selection& s, const std::vector<hsize_t>& dims, hsize_t a, hsize_t b) {
  const std::size_t n = dims.size();
  std::vector<hsize_t> stride(n + 1, 1);  // stride[k]: elements of dimensions k..n-1
  for (std::size_t k = n; k-- > 0;) stride[k] = stride[k + 1] * dims[k];
  while (a < b) {
    std::size_t k = n;
    while (k > 1 && a % stride[k - 1] == 0 && a + stride[k - 1] <= b) --k;
    const hsize_t coord = (a / stride[k]) % dims[k - 1];
    const hsize_t blocks = std::min((b - a) / stride[k], dims[k - 1] - coord);
    std::vector<hsize_t> start(n, 0), count(n, 1);
    for (std::size_t d = 0; d < k; ++d) start[d] = (a / stride[d + 1]) % dims[d];
    count[k - 1] = blocks;
    for (std::size_t d = k; d < n; ++d) count[d] = dims[d];
    s.add(start, count);
    a += blocks * stride[k];
  }
}

// splitmix64's finaliser: every input bit moves every output bit.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

Index localElements(const std::vector<Index>& shape, const ParameterLayout& layout) {
  if (!layout.columnShard) return globalSize(shape);
  return shape.at(0) * Index(layout.columns.size());
}

hid_t selectRange(hid_t space, const ShardRange& r) {
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 1) fail("checkpoint: a dataset without dimensions");
  std::vector<hsize_t> dims(std::size_t(rank), 0);
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  Selection s;
  selectFlat(s, dims, hsize_t(r.begin), hsize_t(r.end()));
  return selected(space, s.blocks());
}

std::uint64_t checksumShare(const void* values, std::size_t valueBytes, const ShardRange& r) {
  const auto* bytes = static_cast<const unsigned char*>(values);
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < r.count; ++i) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, bytes + i * valueBytes, std::min(valueBytes, sizeof bits));
    sum += mix(mix(std::uint64_t(r.begin + i)) ^ bits);
  }
  return sum;
}

ShardRange writtenByCopies(MPI_Comm world, const std::vector<Index>& shape,
                           const ParameterLayout& layout) {
  const std::size_t n = std::size_t(localElements(shape, layout));
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  if (!layout.columnShard) return shardRange(n, rank, size);
  // The copies of a column shard: the ranks whose first column is this rank's.
  const std::vector<Index>& columns = layout.columns;
  std::string error;
  if (!columns.empty() && columns[0] > INT_MAX)
    error = "checkpoint: a column shard starts past column 2^31";
  data::agreeOnError(world, error);
  MPI_Comm copies = MPI_COMM_NULL;
  MPI_Comm_split(world, columns.empty() ? MPI_UNDEFINED : int(columns[0]), rank, &copies);
  ShardRange mine;
  if (copies != MPI_COMM_NULL) {
    std::uint64_t h = 0;
    for (Index c : columns) h = mix(h ^ std::uint64_t(c));
    // Every copy must hold the same columns: their count and hash agree at their min and max.
    long long v[4] = {(long long)columns.size(), -(long long)columns.size(), (long long)(h >> 1),
                      -(long long)(h >> 1)};
    MPI_Allreduce(MPI_IN_PLACE, v, 4, MPI_LONG_LONG, MPI_MIN, copies);
    if (v[0] != -v[1] || v[2] != -v[3])
      error = "checkpoint: ranks holding column " + std::to_string(columns[0]) +
              " of a column shard hold different columns";
    int copy = 0, count = 1;
    MPI_Comm_rank(copies, &copy);
    MPI_Comm_size(copies, &count);
    mine = shardRange(n, copy, count);
    MPI_Comm_free(&copies);
  }
  data::agreeOnError(world, error);
  return mine;
}

}  // namespace hybrid3d::Impl
