#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/grid/BlockDecomposition.hpp>

namespace hybrid3d {

BlockDecomposition::BlockDecomposition(const Index3& globalExtents, const Int3& dims)
    : global_(globalExtents), dims_(dims) {
  for (int i = 0; i < 3; ++i) {
    if (dims[i] < 1) fail("decomposition: grid ", toString(dims), " has a dimension < 1");
    if (globalExtents[i] < 0)
      fail("decomposition: extent ", toString(globalExtents), " has a negative dimension");
  }
}

Box3 BlockDecomposition::ownedBox(const Int3& coords) const {
  Box3 b;
  for (int i = 0; i < 3; ++i) {
    b.lo[i] = begin(i, coords[i]);
    b.hi[i] = end(i, coords[i]);
  }
  return b;
}

int BlockDecomposition::ownerCoord(int dim, Index i) const {
  const Index n = global_[dim];
  const int p = dims_[dim];
  if (i < 0 || i >= n) fail("decomposition: index ", i, " outside extent ", n);
  // Invert blockBegin: the first rem blocks have base+1 voxels, the rest base.
  const Index base = n / p, rem = n % p;
  const Index split = rem * (base + 1);
  return i < split ? static_cast<int>(i / (base + 1)) : static_cast<int>(rem + (i - split) / base);
}

}  // namespace hybrid3d
