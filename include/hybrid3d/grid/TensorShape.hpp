#pragma once
/// \file
/// The shape of a distributed activation as a model sees it: the per-group batch, the channels
/// and the GLOBAL spatial extents. How the extents are cut over the spatial grid is the
/// decomposition's business (BlockDecomposition.hpp, DistTensor.hpp).

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d {

/// Shape of a distributed activation: per-group batch, channels and global spatial extents.
struct TensorShape {
  int batch = 0;
  int channels = 0;
  Index3 extents{0, 0, 0};
  friend bool operator==(const TensorShape& a, const TensorShape& b) {
    return a.batch == b.batch && a.channels == b.channels && a.extents == b.extents;
  }
};

}  // namespace hybrid3d
