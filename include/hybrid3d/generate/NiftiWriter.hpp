#pragma once
/// \file
/// A NIfTI file written on the grid of another (`hybrid3d predict`'s label and probability
/// volumes over their input scan): the header of `like` is kept whole -- version, dim, pixdim,
/// qform and sform codes and matrices, units, orientation, description -- so ITK-SNAP, 3D
/// Slicer or nibabel overlay the result on its input; only the voxel type, the 4th dimension (the
/// channels), the intensity scaling (none) and the intent (labels) change.
///
/// Atomic: written under a hidden temporary name in the same directory (ending as `path` does,
/// so the library compresses a `.nii.gz` alike), read back and compared, then renamed to
/// `path`. A full disk or any short write is an error naming `path`, and nothing is left under
/// the final name.

#include <cstdint>
#include <string>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::generate {

/// `labels`: [D,H,W] (NiftiVolume's order: W = i fastest) with `like`'s extents.
void writeNiftiLabelsLike(const std::string& like, const std::string& path,
                          const std::uint8_t* labels);

/// `values`: [C,D,H,W] float32, C > 1 along the 4th dimension (t).
void writeNiftiChannelsLike(const std::string& like, const std::string& path, Index channels,
                            const float* values);

}  // namespace hybrid3d::generate
