#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/generate/NiftiVolume.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include <nifti2_io.h>

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

// What a gzip file unpacks to, modulo 2^32: its last four bytes (ISIZE, little-endian), so a
// header's promise is checked before its voxels are allocated. -1 when the file is too short.
long long gzipUnpackedSize(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || in.tellg() < 18) return -1;  // a gzip header and trailer alone take 18 bytes
  in.seekg(-4, std::ios::end);
  unsigned char b[4] = {};
  in.read(reinterpret_cast<char*>(b), 4);
  if (!in) return -1;
  return static_cast<long long>(std::uint32_t(b[0]) | std::uint32_t(b[1]) << 8 |
                                std::uint32_t(b[2]) << 16 | std::uint32_t(b[3]) << 24);
}

// Refuses a header that promises more than the file holds (truncated, or lying about its size).
void checkSize(const std::string& path, const nifti_image& image) {
  const std::int64_t voxelBytes = image.nvox * image.nbyper;
  const std::int64_t total = image.iname_offset + voxelBytes;
  if (gzipped(path)) {
    const long long unpacked = gzipUnpackedSize(path);
    if (unpacked != static_cast<long long>(std::uint64_t(total) & 0xffffffffu))
      fail(path, ": the header promises ", voxelBytes, " bytes of voxels after ",
           image.iname_offset, " bytes of header, but the gzip file records ",
           unpacked < 0 ? std::string("no size") : std::to_string(unpacked) + " bytes (mod 2^32)",
           ": truncated, or the header is wrong about the volume's size");
    return;
  }
  std::error_code ec;
  const auto size = static_cast<std::int64_t>(fs::file_size(path, ec));
  if (!ec && size < total)
    fail(path, ": the header promises ", voxelBytes, " bytes of voxels after ", image.iname_offset,
         " bytes of header, but the file holds ", size,
         " bytes: truncated, or the header is wrong about the volume's size");
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
  // image NIfTI-1 in nifti_type.
  int version = 0;
  void* header = nifti_read_header(path.c_str(), &version, /*check=*/0);
  std::free(header);
  Image image(header ? nifti_image_read(path.c_str(), /*read_data=*/0) : nullptr);
  if (!image) fail(path, ": not a NIfTI-1 or NIfTI-2 file, or its header is damaged");
  if ((version != 1 && version != 2) || image->nifti_type == NIFTI_FTYPE_ANALYZE)
    fail(path, ": an ANALYZE 7.5 header, not NIfTI-1 or NIfTI-2");
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
  checkSize(path, *image);
  if (!values) return v;
  if (nifti_image_load(image.get()) < 0 || image->data == nullptr)
    fail(path, ": cannot read its ", image->nvox * image->nbyper,
         " bytes of voxels (damaged compressed data?)");
  v.values.resize(static_cast<std::size_t>(image->nvox));
  toDouble(*image, v.values.data());
  return v;
}

}  // namespace hybrid3d::generate
