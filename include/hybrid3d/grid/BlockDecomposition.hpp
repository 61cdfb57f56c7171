#pragma once
/// \file
/// Block decomposition of a global (D,H,W) extent over a pd x ph x pw process grid.
/// Along each dimension n voxels over p ranks: every rank gets n / p and the first n % p ranks
/// one more. A rank owns an empty range when n < p (late layers of a deep network).

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d {

/// First index of part i of n split into p blocks, remainder to the first parts.
constexpr Index blockBegin(Index n, int p, int i) {
  const Index base = n / p, rem = n % p;
  return i * base + (i < rem ? i : rem);
}

class BlockDecomposition {
public:
  BlockDecomposition() = default;
  /// Throws hybrid3d::Error when an extent is negative or a grid dimension < 1.
  BlockDecomposition(const Index3& globalExtents, const Int3& dims);

  const Index3& globalExtents() const { return global_; }
  const Int3& dims() const { return dims_; }
  Box3 globalBox() const { return {{0, 0, 0}, global_}; }

  Index begin(int dim, int coord) const { return blockBegin(global_[dim], dims_[dim], coord); }
  Index end(int dim, int coord) const { return blockBegin(global_[dim], dims_[dim], coord + 1); }
  Index extent(int dim, int coord) const { return end(dim, coord) - begin(dim, coord); }
  Box3 ownedBox(const Int3& coords) const;
  /// The grid coordinate along `dim` that owns global index i (0 <= i < extent).
  int ownerCoord(int dim, Index i) const;

  friend bool operator==(const BlockDecomposition& a, const BlockDecomposition& b) {
    return a.global_ == b.global_ && a.dims_ == b.dims_;
  }

private:
  Index3 global_{0, 0, 0};
  Int3 dims_{1, 1, 1};
};

}  // namespace hybrid3d
