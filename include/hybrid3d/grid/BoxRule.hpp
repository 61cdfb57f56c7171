#pragma once
/// \file
/// The box rule, written once: a rank's local box is its owned box grown by its ghost widths,
/// in global indices (it may reach outside the domain: zero padding). An empty owned box grows
/// too: it sits at blockBegin (the end of the last non-empty block below it), so an upsampling
/// layer's rank that owns output voxels but no input voxels holds the input it needs as ghosts;
/// where no consumer asks an empty box for ghosts it has none (uniformGhosts), and its local box
/// has no volume. DistTensor, TensorLayout, the halo plan and the reader's data::Subvolume all
/// place their boxes by these functions.

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/grid/BlockDecomposition.hpp>
#include <hybrid3d/grid/GhostWidths.hpp>

namespace hybrid3d {

/// `owned` grown by `ghosts` on each side: [b, b) with one low ghost is [b - 1, b).
inline Box3 growByGhosts(Box3 owned, const GhostWidths& ghosts) {
  for (int i = 0; i < 3; ++i) {
    owned.lo[i] -= ghosts.lo[i];
    owned.hi[i] += ghosts.hi[i];
  }
  return owned;
}

/// The local box of the rank at `coords`: its owned box grown by its ghost widths.
inline Box3 localBox(const BlockDecomposition& d, const Int3& coords, const GhostWidths& ghosts) {
  return growByGhosts(d.ownedBox(coords), ghosts);
}

/// `every` on each rank that owns voxels, none on a rank whose box is empty along a dimension
/// (along that dimension): what "the same widths on every rank" means for a halo test or a
/// reader, where no consumer asks an empty box for ghosts. Fails on a negative width.
inline GhostMap uniformGhosts(const BlockDecomposition& d, const GhostWidths& every) {
  GhostMap g(d.dims(), every);
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < d.dims()[i]; ++k)
      if (d.extent(i, k) == 0) g.set(i, k, 0, 0);
  return g;
}

}  // namespace hybrid3d
