// The checks of a NIfTI header's own bytes (impl/NiftiHeader.hpp).
#include <hybrid3d/core/Error.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <nifti2_io.h>
#include <zlib.h>

#include "impl/NiftiHeader.hpp"

namespace hybrid3d::generate::Impl {

namespace {

// The fields checked, in the host's byte order, from either header version.
struct RawFields {
  std::int64_t dim[8] = {};
  int datatype = 0, bitpix = 0;
  double voxOffset = 0;
  int headerBytes = 0;
};

// `v` with its bytes reversed when the file's byte order is not the host's.
template <class T>
T native(T v, bool swapped) {
  if (!swapped) return v;
  unsigned char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  std::reverse(b, b + sizeof(T));
  std::memcpy(&v, b, sizeof(T));
  return v;
}

// The header's sizeof_hdr tells its byte order (348 or 540 as the host reads it, else swapped).
template <class Header>
RawFields fieldsOf(const Header& h, int headerBytes) {
  const bool swapped = h.sizeof_hdr != headerBytes;
  RawFields f;
  for (int d = 0; d < 8; ++d) f.dim[d] = native(h.dim[d], swapped);
  f.datatype = native(h.datatype, swapped);
  f.bitpix = native(h.bitpix, swapped);
  f.voxOffset = double(native(h.vox_offset, swapped));
  f.headerBytes = headerBytes;
  return f;
}

RawFields rawFields(const std::string& bytes, int version) {
  auto as = [&](auto header) {
    std::memcpy(&header, bytes.data(), sizeof header);
    return fieldsOf(header, int(sizeof header));
  };
  return version == 2 ? as(nifti_2_header{}) : as(nifti_1_header{});
}

// sizeof_hdr, the first 4 bytes, in either byte order.
bool headerSizeIs(const std::string& bytes, std::int32_t size) {
  std::int32_t v = 0;
  std::memcpy(&v, bytes.data(), sizeof v);
  return v == size || native(v, true) == size;
}

}  // namespace

NiftiHeaderBytes readNiftiHeaderBytes(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");  // reads an uncompressed file as it is
  if (!file) fail(path, ": cannot open it for reading");
  NiftiHeaderBytes h;
  h.bytes.assign(sizeof(nifti_2_header), '\0');
  const int n = gzread(file, h.bytes.data(), unsigned(h.bytes.size()));
  gzclose(file);
  h.bytes.resize(std::size_t(std::max(n, 0)));
  const std::int32_t sizes[2] = {sizeof(nifti_1_header), sizeof(nifti_2_header)};
  for (int version = 1; version <= 2; ++version) {
    if (h.bytes.size() < 4 || !headerSizeIs(h.bytes, sizes[version - 1])) continue;
    if (h.bytes.size() < std::size_t(sizes[version - 1]))
      fail(path, ": ends inside its ", sizes[version - 1], "-byte NIfTI-", version, " header",
           n < 0 ? " (its gzip data are damaged)" : "");
    h.version = version;
    return h;
  }
  fail(path, ": not a NIfTI-1 or NIfTI-2 file (its first 4 bytes do not give a header size of ",
       sizes[0], " or ", sizes[1], ")");
}

NiftiLayout checkNiftiHeader(const std::string& path, const std::string& header, int version) {
  const RawFields f = rawFields(header, version);
  if (f.dim[0] < 1 || f.dim[0] > 7)
    fail(path, ": the header's dim[0] is ", f.dim[0], "; NIfTI allows 1 to 7 dimensions");
  NiftiLayout layout;
  layout.voxels = 1;
  for (int d = 1; d <= f.dim[0]; ++d) {
    if (f.dim[d] < 1)
      fail(path, ": the header's dim[", d, "] is ", f.dim[d], "; every dimension needs a voxel");
    if (layout.voxels > std::numeric_limits<std::int64_t>::max() / f.dim[d])
      fail(path, ": the header's dimensions multiply past 2^63 voxels (dim[", d, "] = ", f.dim[d],
           ")");
    layout.voxels *= f.dim[d];
  }
  if (!nifti_is_valid_datatype(f.datatype))
    fail(path, ": the header's datatype ", f.datatype, " is none that NIfTI defines");
  int size = 0, swapSize = 0;
  nifti_datatype_sizes(f.datatype, &size, &swapSize);
  if (size > 0 && f.bitpix != 8 * size)
    fail(path, ": the header's datatype ", nifti_datatype_string(f.datatype), " has ", 8 * size,
         " bits per voxel but its bitpix says ", f.bitpix);
  if (size > 0 && layout.voxels > std::numeric_limits<std::int64_t>::max() / size)
    fail(path, ": the header's ", layout.voxels, " voxels of ", size,
         " bytes each are more than 2^63 bytes");
  layout.voxelBytes = layout.voxels * size;
  // The header, then 4 bytes saying whether extensions follow, then (extensions and) voxels.
  const int first = f.headerBytes + 4;
  if (!std::isfinite(f.voxOffset) || f.voxOffset < first ||
      f.voxOffset != std::floor(f.voxOffset) || f.voxOffset > 1e18)
    fail(path, ": the header's vox_offset is ", f.voxOffset, "; the voxels of a single-file NIfTI-",
         version, " image start at a whole byte from ", first, " on (after the ", f.headerBytes,
         "-byte header and its 4-byte extension flag)");
  layout.voxOffset = static_cast<std::int64_t>(f.voxOffset);
  return layout;
}

}  // namespace hybrid3d::generate::Impl
