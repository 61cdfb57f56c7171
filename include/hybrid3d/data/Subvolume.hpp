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

  /// The subvolume that fills tensor t (its decomposition, coordinates and ghosts).
  template <class T, class M>
  static Subvolume of(const DistTensor<T, M>& t) {
    return Subvolume(t.decomposition(), t.coords(), t.ghosts());
  }
};

}  // namespace hybrid3d::data
