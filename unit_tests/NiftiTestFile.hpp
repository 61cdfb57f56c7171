#pragma once
// Small NIfTI files written with the NIfTI library itself (nifti2_io, Debian's libnifti2-dev),
// for the import tests and the bad-input table: NIfTI-1 or -2, any voxel type, 3D or 4D, spacing
// and scaling as asked, .nii or .nii.gz by the file's name (zlib for NIfTI-2, see writeNifti2).
// Never a download.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <nifti2_io.h>
#include <zlib.h>

namespace hybrid3d::test {

struct NiftiSpec {
  std::array<std::int64_t, 4> xyzt{8, 8, 8, 1};  // nx, ny, nz, nt (nt 1: a 3D file)
  int datatype = NIFTI_TYPE_FLOAT32;
  int version = 1;                        // 1 or 2
  std::array<double, 3> pixdim{1, 1, 1};  // x, y, z
  double slope = 0, inter = 0;            // scl_slope 0: no scaling
};

// A single-file NIfTI-2 image: the header the library makes of `nim`, 4 bytes saying "no
// extensions", the voxels from byte 544. (Debian 12's nifti2_io 3.0.1 writes single-file NIfTI-2
// with the voxels at offset 0, over its own header, and a short magic; it reads them correctly.)
inline bool writeNifti2(const std::string& path, const nifti_image& nim) {
  nifti_2_header header;
  if (nifti_convert_nim2n2hdr(&nim, &header) != 0) return false;
  header.vox_offset = 544;
  std::memcpy(header.magic, "n+2\0\r\n\032\n", 8);  // 3.0.1 leaves out the last four bytes
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof header);
  bytes.resize(544, '\0');
  bytes.append(static_cast<const char*>(nim.data), std::size_t(nim.nvox) * std::size_t(nim.nbyper));
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (!gz)
    return bool(
        std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size())));
  gzFile f = gzopen(path.c_str(), "wb");
  const bool ok = f && gzwrite(f, bytes.data(), unsigned(bytes.size())) == int(bytes.size());
  return f && gzclose(f) == Z_OK && ok;
}

// Stores stored[i] (row-major [t][k][j][i], as NIfTI lays voxels out) converted to the spec's
// type; a type that is not one real number (complex, RGB) gets zero bytes. Throws when the
// library wrote nothing.
inline void writeNiftiFile(const std::string& path, const NiftiSpec& spec,
                           const std::vector<double>& stored) {
  nifti_set_debug_level(0);
  const bool fourD = spec.xyzt[3] > 1;
  const std::int64_t dims[8] = {
      fourD ? 4 : 3, spec.xyzt[0], spec.xyzt[1], spec.xyzt[2], spec.xyzt[3], 1, 1, 1};
  nifti_image* nim = nifti_make_new_nim(dims, spec.datatype, 1);
  if (!nim) throw std::runtime_error("nifti_make_new_nim failed for " + path);
  auto put = [&](auto type) {
    using T = decltype(type);
    T* data = static_cast<T*>(nim->data);
    for (std::int64_t i = 0; i < nim->nvox && std::size_t(i) < stored.size(); ++i)
      data[i] = static_cast<T>(stored[std::size_t(i)]);
  };
  switch (spec.datatype) {
    case NIFTI_TYPE_UINT8:
      put(std::uint8_t());
      break;
    case NIFTI_TYPE_INT16:
      put(std::int16_t());
      break;
    case NIFTI_TYPE_INT32:
      put(std::int32_t());
      break;
    case NIFTI_TYPE_FLOAT32:
      put(float());
      break;
    case NIFTI_TYPE_FLOAT64:
      put(double());
      break;
    default:
      std::memset(nim->data, 0, std::size_t(nim->nvox) * std::size_t(nim->nbyper));
  }
  for (int a = 0; a < 3; ++a) nim->pixdim[a + 1] = spec.pixdim[std::size_t(a)];
  nim->dx = spec.pixdim[0];
  nim->dy = spec.pixdim[1];
  nim->dz = spec.pixdim[2];
  nim->xyz_units = NIFTI_UNITS_MM;
  nim->scl_slope = spec.slope;
  nim->scl_inter = spec.inter;
  nim->nifti_type = spec.version == 2 ? NIFTI_FTYPE_NIFTI2_1 : NIFTI_FTYPE_NIFTI1_1;
  bool written = false;
  if (spec.version == 2) {
    written = writeNifti2(path, *nim);
  } else if (nifti_set_filenames(nim, path.c_str(), 0, 1) == 0) {
    nim->nifti_type = NIFTI_FTYPE_NIFTI1_1;
    nifti_image_write(nim);
    written = std::ifstream(path).good();
  }
  nifti_image_free(nim);
  if (!written) throw std::runtime_error("the NIfTI library did not write " + path);
}

// The bytes of a NIfTI file as the library reads them: gunzipped for a .nii.gz (every member).
inline std::string niftiFileBytes(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::string bytes;
  char buffer[1 << 16];
  int n = 0;
  while ((n = gzread(f, buffer, sizeof buffer)) > 0) bytes.append(buffer, std::size_t(n));
  gzclose(f);
  if (n < 0) throw std::runtime_error("cannot unpack " + path);
  return bytes;
}

// Writes `bytes` as the file `path`: plain, or for a .nii.gz as `members` gzip members (the
// bytes split evenly; gzip -t and zlib read them as one stream) and then `emptyMembers` members
// holding nothing (bgzip ends every file with one).
inline void writeNiftiBytes(const std::string& path, const std::string& bytes, int members = 1,
                            int emptyMembers = 0) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!gz) {
    out.write(bytes.data(), std::streamsize(bytes.size()));
  } else {
    const std::size_t step = (bytes.size() + std::size_t(members) - 1) / std::size_t(members);
    for (int m = 0; m < members + emptyMembers; ++m) {
      const std::size_t from = std::min(bytes.size(), std::size_t(m) * step);
      const std::size_t size = m < members ? std::min(step, bytes.size() - from) : 0;
      uLongf packed = compressBound(uLong(size)) + 64;
      std::string member(packed, '\0');
      z_stream z{};
      if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        throw std::runtime_error("zlib cannot start a gzip member");
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + from));
      z.avail_in = uInt(size);
      z.next_out = reinterpret_cast<Bytef*>(member.data());
      z.avail_out = uInt(member.size());
      const int status = deflate(&z, Z_FINISH);
      packed = z.total_out;
      deflateEnd(&z);
      if (status != Z_STREAM_END) throw std::runtime_error("zlib cannot pack a gzip member");
      out.write(member.data(), std::streamsize(packed));
    }
  }
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

// Sets header field `field` (dim0 .. dim7, datatype, bitpix, vox_offset, scl_slope, scl_inter)
// of the unpacked file `bytes` (NIfTI-`version`, the host's byte order) to `value`, converted
// to the field's type as the header stores it.
// `value` as a header field of type T stores it: an integer field takes a non-finite value as 0
// and wraps a value outside its range (as a C cast of the whole number would).
template <class T>
T asHeaderField(double value) {
  if constexpr (std::is_floating_point_v<T>) {
    return T(value);
  } else {
    const double whole = std::isfinite(value) ? std::max(-9.2e18, std::min(9.2e18, value)) : 0.0;
    return T(static_cast<std::int64_t>(whole));
  }
}

inline void setNiftiHeaderField(std::string& bytes, int version, const std::string& field,
                                double value) {
  auto put = [&](std::size_t offset, auto typed) {
    if (offset + sizeof typed > bytes.size()) throw std::runtime_error("header too short");
    std::memcpy(&bytes[offset], &typed, sizeof typed);
  };
  auto set = [&](auto header) {
    using H = decltype(header);
    using Dim = std::remove_reference_t<decltype(header.dim[0])>;
    if (field.rfind("dim", 0) == 0 && field.size() == 4 && field[3] >= '0' && field[3] <= '7')
      return put(offsetof(H, dim) + sizeof(Dim) * std::size_t(field[3] - '0'),
                 asHeaderField<Dim>(value));
    auto at = [&](std::size_t offset, auto member) {
      return put(offset, asHeaderField<decltype(member)>(value));
    };
    if (field == "datatype") return at(offsetof(H, datatype), header.datatype);
    if (field == "bitpix") return at(offsetof(H, bitpix), header.bitpix);
    if (field == "vox_offset") return at(offsetof(H, vox_offset), header.vox_offset);
    if (field == "scl_slope") return at(offsetof(H, scl_slope), header.scl_slope);
    if (field == "scl_inter") return at(offsetof(H, scl_inter), header.scl_inter);
    throw std::runtime_error("no header field " + field);
  };
  if (version == 2)
    set(nifti_2_header{});
  else
    set(nifti_1_header{});
}

// Makes an uncompressed NIfTI-1 file's header claim `nz` slices (dim[3], int16 at byte 46):
// a header that lies about the volume's size.
inline void claimSlices(const std::string& path, std::int16_t nz) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(40 + 2 * 3);
  f.write(reinterpret_cast<const char*>(&nz), sizeof nz);
  if (!f) throw std::runtime_error("cannot patch " + path);
}

}  // namespace hybrid3d::test
