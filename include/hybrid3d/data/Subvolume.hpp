#pragma once
/// \file
/// The part of every sample one rank reads: its owned box of the sample's (D,H,W) plus the ghost
/// cells of the input tensor, clipped to the domain. Ghosts outside the domain are never read;
/// they are zero padding, written by Preprocess.

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/grid/BlockDecomposition.hpp>
#include <hybrid3d/grid/BoxRule.hpp>
#include <hybrid3d/grid/DistTensor.hpp>

namespace hybrid3d::data {

struct Subvolume {
  Index3 extents{0, 0, 0};  // the sample's global (D,H,W)
  Box3 owned;               // this rank's box, global indices
  Box3 local;               // owned grown by the ghosts (may reach outside the domain)
  Box3 read;                // local clipped to the domain: what is read from the file

  Subvolume() = default;
  /// The box rule of DistTensor (grid/BoxRule.hpp): the owned box grown by this rank's ghosts,
  /// an empty owned box too (it may read its consumer's ghosts from the file).
  Subvolume(const BlockDecomposition& decomposition, const Int3& coords, const GhostWidths& ghosts)
      : extents(decomposition.globalExtents()),
        owned(decomposition.ownedBox(coords)),
        local(localBox(decomposition, coords, ghosts)),
        read(local.empty() ? local : intersect(local, decomposition.globalBox())) {}

  /// The same tensor filled from a window of a file of `fileExtents`: tensor voxel v is file
  /// voxel origin + v, and only tensor voxels in [0, valid) come from the file; the others stay
  /// zero padding (`hybrid3d predict`: a volume padded up to the model's extents, or one cube cut
  /// out of a larger volume, predicted as if it were a volume of its own).
  Subvolume window(const Index3& origin, const Index3& valid, const Index3& fileExtents) const {
    Subvolume w;
    w.extents = fileExtents;
    auto shifted = [&](Box3 b) {
      if (b.empty()) return b;
      for (int a = 0; a < 3; ++a) {
        b.lo[a] += origin[a];
        b.hi[a] += origin[a];
      }
      return b;
    };
    w.owned = shifted(owned);
    w.local = shifted(local);
    const Box3 inside = intersect(local, Box3{{0, 0, 0}, valid});
    // An empty read box keeps the local box's corner, so Preprocess pads the whole box.
    w.read = inside.empty() ? Box3{w.local.lo, w.local.lo} : shifted(inside);
    return w;
  }

  /// The subvolume that fills tensor t (its decomposition, coordinates and ghosts).
  template <class T, class M>
  static Subvolume of(const DistTensor<T, M>& t) {
    return Subvolume(t.decomposition(), t.coords(), t.ghosts());
  }
};

}  // namespace hybrid3d::data
