#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/generate/NiftiVolume.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <new>

#include <nifti2_io.h>

#include "impl/NiftiHeader.hpp"

namespace hybrid3d::generate {

namespace {

namespace fs = std::filesystem;

struct FreeImage {
  void operator()(nifti_image* image) const { nifti_image_free(image); }
};
using Image = std::unique_ptr<nifti_image, FreeImage>;

bool gzipped(const std::string& path) {
  return path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
}

// Refuses a header that promises more than the file holds (truncated, or lying about its size).
// A gzipped file is sized by unpacking it (no further than the header's promise), every member.
void checkSize(const std::string& path, const Impl::NiftiLayout& layout) {
  const std::int64_t total = layout.voxOffset + layout.voxelBytes;
  std::error_code ec;
  const auto size = gzipped(path) ? Impl::gzipUnpackedBytes(path, total)
                                  : static_cast<std::int64_t>(fs::file_size(path, ec));
  if (!ec && size < total)
    fail(path, ": the header promises ", layout.voxelBytes, " bytes of voxels after ",
         layout.voxOffset, " bytes of header, but the file holds ", size,
         gzipped(path) ? " bytes unpacked" : " bytes",
         ": truncated, or the header is wrong about the volume's size");
}

// Calls f(T()) with the C++ type of a NIfTI voxel type that is one real number; false for any
// other (complex, RGB, float128, binary), without calling f.
template <class F>
bool withRealType(int datatype, F f) {
  switch (datatype) {
    case NIFTI_TYPE_INT8:
      return f(std::int8_t()), true;
    case NIFTI_TYPE_UINT8:
      return f(std::uint8_t()), true;
    case NIFTI_TYPE_INT16:
      return f(std::int16_t()), true;
    case NIFTI_TYPE_UINT16:
      return f(std::uint16_t()), true;
    case NIFTI_TYPE_INT32:
      return f(std::int32_t()), true;
    case NIFTI_TYPE_UINT32:
      return f(std::uint32_t()), true;
    case NIFTI_TYPE_INT64:
      return f(std::int64_t()), true;
    case NIFTI_TYPE_UINT64:
      return f(std::uint64_t()), true;
    case NIFTI_TYPE_FLOAT32:
      return f(float()), true;
    case NIFTI_TYPE_FLOAT64:
      return f(double()), true;
    default:
      return false;
  }
}

// The stored values as double, scaled (the type was checked by withRealType before loading).
void toDouble(const nifti_image& image, double* out) {
  // scl_slope = 0 means "no scaling" (NIfTI-1 standard); a non-finite one is treated alike.
  const bool scaled = image.scl_slope != 0 && std::isfinite(image.scl_slope);
  const double slope = scaled ? image.scl_slope : 1.0;
  const double inter = scaled && std::isfinite(image.scl_inter) ? image.scl_inter : 0.0;
  withRealType(image.datatype, [&](auto type) {
    using T = decltype(type);
    const T* stored = static_cast<const T*>(image.data);
    for (std::int64_t i = 0; i < image.nvox; ++i)
      out[i] = slope * static_cast<double>(stored[i]) + inter;
  });
}

}  // namespace

NiftiVolume readNiftiVolume(const std::string& path, bool values) {
  // The library reports on stderr unless told not to; errors here are ours, one line each.
  static std::once_flag quiet;
  std::call_once(quiet, [] { nifti_set_debug_level(0); });
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) fail(path, ": no such file");
  // The version from the header itself: Debian 12's nifti2_io (3.0.1) calls every single-file
  // image NIfTI-1 in nifti_type. The header's own fields first: the library would repair some
  // of them silently.
  const Impl::NiftiHeaderBytes header = Impl::readNiftiHeaderBytes(path);
  const int version = header.version;
  const Impl::NiftiLayout layout = Impl::checkNiftiHeader(path, header.bytes, version);
  Image image(nifti_image_read(path.c_str(), /*read_data=*/0));
  if (!image) fail(path, ": not a NIfTI-1 or NIfTI-2 file, or its header is damaged");
  if (image->nifti_type == NIFTI_FTYPE_ANALYZE)
    fail(path, ": an ANALYZE 7.5 header, not NIfTI-1 or NIfTI-2");
  if (image->iname_offset != layout.voxOffset || image->nvox != layout.voxels)
    fail(path, ": the NIfTI library reads its header differently (voxels at byte ",
         image->iname_offset, ", ", image->nvox, " of them; the header says ", layout.voxOffset,
         ", ", layout.voxels, ")");
  NiftiVolume v;
  v.path = path;
  v.version = version;
  const std::int64_t* dim = image->dim;
  if (dim[0] < 3 || dim[0] > 7)
    fail(path, ": has ", dim[0], " dimension(s); import needs a 3D volume (4D: channels along t)");
  for (int d = 5; d <= dim[0]; ++d)
    if (dim[d] > 1)
      fail(path, ": has ", dim[0], " dimensions (dim[", d, "] = ", dim[d],
           "); import reads 3D volumes with channels along the 4th");
  v.datatype = nifti_datatype_string(image->datatype);
  if (!withRealType(image->datatype, [](auto) {}))
    fail(path, ": voxels of type ", v.datatype, " (NIfTI datatype ", image->datatype,
         ") are not one real number each; import reads int8 to uint64, float32 and float64");
  v.channels = dim[0] >= 4 ? dim[4] : 1;
  v.extent = {dim[3], dim[2], dim[1]};
  v.spacing = {image->pixdim[3], image->pixdim[2], image->pixdim[1]};
  v.spacingUnits = image->xyz_units == NIFTI_UNITS_MM       ? "mm"
                   : image->xyz_units == NIFTI_UNITS_MICRON ? "micron"
                   : image->xyz_units == NIFTI_UNITS_METER  ? "m"
                                                            : "unknown";
  checkSize(path, layout);
  if (!values) return v;
  if (nifti_image_load(image.get()) < 0 || image->data == nullptr)
    fail(path, ": cannot read its ", layout.voxelBytes,
         " bytes of voxels (out of memory, or damaged compressed data)");
  try {
    v.values.resize(static_cast<std::size_t>(image->nvox));
  } catch (const std::bad_alloc&) {
    fail(path, ": its ", layout.voxels, " voxels need ", double(layout.voxels) * 8 / (1 << 30),
         " GiB of memory as doubles, which could not be allocated");
  }
  toDouble(*image, v.values.data());
  return v;
}

}  // namespace hybrid3d::generate
