#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/grid/LayerLayout.hpp>

namespace hybrid3d {

LayerLayout::LayerLayout(const Int3& dims, int groupSize) : dims_(dims), groupSize_(groupSize) {
  for (int i = 0; i < 3; ++i)
    if (dims[i] < 1) fail("layer grid ", toString(dims), " has a dimension < 1");
  if (groupSize < 1) fail("layer grid: a group of ", groupSize, " ranks");
  if (1LL * dims[0] * dims[1] * dims[2] > groupSize)
    fail("layer grid ", toString(dims), " has ", 1LL * dims[0] * dims[1] * dims[2],
         " ranks, more than the ", groupSize, " of a spatial group");
}

LayerPlace LayerLayout::place(int groupRank) const {
  if (groupRank < 0 || groupRank >= groupSize_)
    fail("layer grid ", describe(), ": group rank ", groupRank, " outside [0, ", groupSize_, ")");
  LayerPlace p;
  const int S = subGrids(), R = ranks();
  p.active = groupRank < S * R;
  p.subGrid = p.active ? groupRank / R : S;
  p.position = p.active ? groupRank % R : groupRank - S * R;
  p.coords = coordsOf(p.position);
  return p;
}

int LayerLayout::samples(int groupBatch, int subGrid) const {
  const int S = subGrids();
  if (subGrid < 0 || subGrid >= S || groupBatch <= subGrid) return 0;
  return (groupBatch - subGrid + S - 1) / S;
}

Int3 LayerLayout::coordsOf(int position) const {
  return {position / (dims_[1] * dims_[2]), position / dims_[2] % dims_[1], position % dims_[2]};
}

std::string LayerLayout::describe() const {
  const int S = subGrids();
  return S > 1 ? toString(dims_) + " x " + std::to_string(S) : toString(dims_);
}

}  // namespace hybrid3d
