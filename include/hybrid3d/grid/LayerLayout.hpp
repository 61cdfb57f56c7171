#pragma once
/// \file
/// Where a layer's tensors live inside one spatial group (docs/design.md section 11): the group's P
/// ranks run the layer as floor(P / P') sub-grids of P' = D x H x W ranks each; sub-grid k holds
/// the group's samples k, k + S, k + 2S, ... (S = floor(P / P') sub-grids). Group rank r belongs
/// to sub-grid r / P' at position r % P' (row-major over D x H x W, MPI_Cart's order); the last
/// P mod P' ranks belong to no sub-grid and hold no sample in that layer: each is a shadow of
/// position r - S P', holding that position's parameter replicas (a column shard) so that the
/// parameters of every rank stay what they are on a full sub-grid.
///
/// The input's layout is the spatial grid itself: one sub-grid of every rank, all samples. A
/// layout is a value (compare, print); it names no communicator and is pure arithmetic, so a
/// planner evaluates any group size without MPI. grid/LayerGrid.hpp adds the communicators.

#include <string>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d {

/// Where one group rank sits in a layout.
struct LayerPlace {
  bool active = true;    // in a sub-grid (false: one of the last P mod P' ranks)
  int subGrid = 0;       // its sub-grid; subGrids() where inactive
  int position = 0;      // its rank in the sub-grid (inactive: the position it shadows)
  Int3 coords{0, 0, 0};  // of `position` over the sub-grid's D x H x W
};

class LayerLayout {
public:
  LayerLayout() = default;
  /// Throws naming the grid when a dimension is < 1 or it has more ranks than the group.
  LayerLayout(const Int3& dims, int groupSize);

  const Int3& dims() const { return dims_; }
  int groupSize() const { return groupSize_; }
  int ranks() const { return dims_[0] * dims_[1] * dims_[2]; }  // P'
  int subGrids() const { return groupSize_ / ranks(); }         // S
  /// The spatial grid of the group: one sub-grid, every rank in it.
  bool whole() const { return ranks() == groupSize_; }

  LayerPlace place(int groupRank) const;
  /// Samples of a group batch of `groupBatch` that sub-grid `subGrid` holds (0 for subGrid >= S).
  int samples(int groupBatch, int subGrid) const;
  /// The group's sample index of local sample n of sub-grid `subGrid`.
  int groupSample(int subGrid, int n) const { return subGrid + n * subGrids(); }
  /// The sub-grid holding group sample j, and its local index there.
  int subGridOf(int groupSample) const { return groupSample % subGrids(); }
  int localIndexOf(int groupSample) const { return groupSample / subGrids(); }
  /// The group rank at `position` of sub-grid `subGrid`.
  int groupRank(int subGrid, int position) const { return subGrid * ranks() + position; }
  Int3 coordsOf(int position) const;
  int positionOf(const Int3& coords) const {
    return (coords[0] * dims_[1] + coords[1]) * dims_[2] + coords[2];
  }

  /// "2x1x1", with the sub-grids where there are several: "1x1x1 x 8".
  std::string describe() const;

  friend bool operator==(const LayerLayout& a, const LayerLayout& b) {
    return a.dims_ == b.dims_ && a.groupSize_ == b.groupSize_;
  }
  friend bool operator!=(const LayerLayout& a, const LayerLayout& b) { return !(a == b); }

private:
  Int3 dims_{1, 1, 1};
  int groupSize_ = 1;
};

}  // namespace hybrid3d
