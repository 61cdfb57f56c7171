#pragma once
/// \file
/// A volume of any extent made a cube of width S, centred on every axis: an axis longer than S
/// is cropped to its middle S voxels, a shorter one lies in the middle of the S, the rest
/// filled. Where the difference is odd, the extra voxel is cut (or padded) at the high end.

#include <array>
#include <vector>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::generate {

/// Where an axis of `extent` source voxels lands in `width` output voxels: source voxels
/// [source, source + count) go to output voxels [target, target + count).
struct AxisPlacement {
  Index source = 0, target = 0, count = 0;
  /// The source index of output voxel 0 (negative when padded).
  Index offset() const { return source - target; }
};

inline AxisPlacement centredPlacement(Index extent, Index width) {
  if (extent >= width) return {(extent - width) / 2, 0, width};
  return {0, (width - extent) / 2, extent};
}

/// The width^3 cube, row-major [D, H, W], of a source volume of `extent` (D, H, W) whose voxel
/// (d, h, w) is value(d, h, w); `fill` where no source voxel lands.
template <class Out, class Value>
std::vector<Out> centredCube(const std::array<Index, 3>& extent, Index width, Out fill,
                             Value value) {
  const AxisPlacement d = centredPlacement(extent[0], width),
                      h = centredPlacement(extent[1], width),
                      w = centredPlacement(extent[2], width);
  std::vector<Out> cube(static_cast<std::size_t>(width * width * width), fill);
  for (Index i = 0; i < d.count; ++i)
    for (Index j = 0; j < h.count; ++j) {
      Out* row = cube.data() + ((d.target + i) * width + h.target + j) * width + w.target;
      for (Index k = 0; k < w.count; ++k) row[k] = value(d.source + i, h.source + j, w.source + k);
    }
  return cube;
}

}  // namespace hybrid3d::generate
