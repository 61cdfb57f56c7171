#pragma once
// A NIfTI header's promises about its voxels, read from the header's own bytes and checked
// before the library is trusted with them: nifti2_io repairs some fields silently (a dim of 0 or
// below becomes 1, dropping most of the volume; a vox_offset below the header becomes the
// header's size, shifting every voxel) and reads a datatype that disagrees with bitpix as the
// datatype says.
#include <cstdint>
#include <string>

namespace hybrid3d::generate::Impl {

struct NiftiLayout {
  std::int64_t voxOffset = 0;   // the byte of the first voxel
  std::int64_t voxels = 0;      // dim[1] x ... x dim[dim[0]]
  std::int64_t voxelBytes = 0;  // voxels x the datatype's size; never wrapped
};

struct NiftiHeaderBytes {
  int version = 0;    // 1 or 2
  std::string bytes;  // the header, 348 or 540 bytes, as the file holds them
};

/// The header of `path` (.nii or .nii.gz) read by zlib, before the NIfTI library sees the file
/// (it prints to stderr, whatever its debug level, on a file too short for its header). Throws
/// naming the file when no NIfTI-1 or NIfTI-2 header size opens it or the file ends inside it.
NiftiHeaderBytes readNiftiHeaderBytes(const std::string& path);

/// Checks the raw header `header` (a nifti_1_header for version 1, nifti_2_header for 2, in
/// the file's byte order) of the single-file image `path`: dim[0] in 1..7 and every used dim
/// at least 1, a datatype NIfTI defines whose size is bitpix (for the datatypes the library knows),
/// a vox_offset that is a whole number of bytes past the header and its extension flag, and a voxel
/// byte count that fits 63 bits. Throws one line naming the file and the field otherwise.
NiftiLayout checkNiftiHeader(const std::string& path, const std::string& header, int version);

/// How many bytes the gzip file `path` unpacks to, every member read (gzip and bgzip may write
/// several; gzip -t accepts them), counting stops at `enough`. Throws naming the file and zlib's
/// message when the compressed data are damaged or cut short before `enough` bytes.
std::int64_t gzipUnpackedBytes(const std::string& path, std::int64_t enough);

}  // namespace hybrid3d::generate::Impl
