#pragma once
/// \file
/// One NIfTI-1 or NIfTI-2 volume (`.nii` or `.nii.gz`) read whole by the calling rank, through
/// the NIfTI clib's nifti2_io (Debian: libnifti2-dev), which reads both versions and either byte
/// order.
///
/// Axis order: NIfTI stores voxel (i, j, k, t) with i fastest. The values here keep that order,
/// row-major as [t][k][j][i], so they are [C, D, H, W] with D = k, H = j, W = i and the channels
/// along t: nothing is transposed, and no orientation matrix (qform/sform) is applied.
///
/// Values: every real voxel type (int8 .. uint64, float32, float64) as double, with the header's
/// scaling applied where scl_slope is not 0 (value = scl_slope * stored + scl_inter, as the
/// NIfTI standard says). The library reads NaN and Inf floats as 0.

#include <array>
#include <string>
#include <vector>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::generate {

struct NiftiVolume {
  std::string path;
  int version = 0;                  // 1 or 2
  std::string datatype;             // as the library names it: "INT16", "FLOAT32", ...
  Index channels = 1;               // dim[4] (t); 1 for a 3D file
  std::array<Index, 3> extent{};    // D, H, W = dim[3], dim[2], dim[1]
  std::array<double, 3> spacing{};  // D, H, W = pixdim[3], pixdim[2], pixdim[1]
  std::string spacingUnits;         // "mm", "micron", "m" or "unknown"
  std::vector<double> values;       // [C, D, H, W], row-major, scaled

  Index voxels() const { return extent[0] * extent[1] * extent[2]; }
};

/// Reads `path`. Throws hybrid3d::Error with one line naming the file: not a NIfTI-1/2 file or a
/// damaged header, header fields the library would repair silently (a dim of 0 or below, a
/// vox_offset inside the header or not a whole number, a bitpix other than the datatype's),
/// dimensions whose byte count passes 2^63, fewer than 3 or more than 4 dimensions (a 4th past 1
/// is the channels), a voxel type that is not a real number (complex, RGB, ...), a header that
/// promises more voxel bytes than the file holds (truncated, or a header that lies about its
/// size; a `.nii.gz` is unpacked to count them, every gzip member, before anything is
/// allocated), voxels that cannot be read or allocated. The library prints nothing.
/// values = false: the header only (values left empty), checked alike; the voxels are not read.
NiftiVolume readNiftiVolume(const std::string& path, bool values = true);

}  // namespace hybrid3d::generate
