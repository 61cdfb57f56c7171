#include <hybrid3d/generate/NiftiWriter.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include <nifti2_io.h>
#include <zlib.h>

#include <hybrid3d/core/Error.hpp>

namespace hybrid3d::generate {

namespace {

namespace fs = std::filesystem;

struct FreeImage {
  void operator()(nifti_image* image) const {
    if (image) nifti_image_free(image);
  }
};
using Image = std::unique_ptr<nifti_image, FreeImage>;

// `like`'s header, with the NIfTI version its own header states (Debian 12's nifti2_io calls
// every single-file image NIfTI-1 once read, and would write a NIfTI-2 input back as NIfTI-1).
Image headerOf(const std::string& like) {
  nifti_set_debug_level(0);
  int version = 0;
  void* header = nifti_read_header(like.c_str(), &version, /*check=*/0);
  std::free(header);
  Image image(header ? nifti_image_read(like.c_str(), /*read_data=*/0) : nullptr);
  if (!image) fail(like, ": not a NIfTI-1 or NIfTI-2 file, or its header is damaged");
  image->nifti_type = version == 2 ? NIFTI_FTYPE_NIFTI2_1 : NIFTI_FTYPE_NIFTI1_1;
  return image;
}

// A single-file NIfTI-2 image written by hand: Debian 12's nifti2_io 3.0.1 writes one with its
// voxels at offset 0, over its own header, and a short magic (it reads them correctly). The
// header the library makes of `im`, 4 bytes saying "no extensions", the voxels from byte 544.
void writeNifti2(const std::string& path, const nifti_image& im) {
  nifti_2_header header;
  if (nifti_convert_nim2n2hdr(&im, &header) != 0) return;  // the read-back check reports it
  header.vox_offset = 544;
  std::memcpy(header.magic, "n+2\0\r\n\032\n", 8);
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof header);
  bytes.resize(544, '\0');
  bytes.append(static_cast<const char*>(im.data), std::size_t(im.nvox) * std::size_t(im.nbyper));
  gzFile f = gzopen(path.c_str(), path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0
                                      ? "wb"
                                      : "wbT");  // T: plain, not compressed
  if (!f) return;
  gzwrite(f, bytes.data(), unsigned(bytes.size()));
  gzclose(f);
}

// The hidden temporary beside `path`, with its extension (.nii or .nii.gz).
std::string temporaryFor(const std::string& path) {
  const fs::path p(path);
  return (p.parent_path() / ("." + p.filename().string() + ".tmp")).string() +
         (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0 ? ".nii.gz" : ".nii");
}

void write(const std::string& like, const std::string& path, int datatype, Index channels,
           const void* data) {
  Image image = headerOf(like);
  nifti_image& im = *image;
  im.datatype = datatype;
  nifti_datatype_sizes(datatype, &im.nbyper, &im.swapsize);
  im.scl_slope = 0;  // the values as they are
  im.scl_inter = 0;
  im.cal_min = im.cal_max = 0;
  im.intent_code = channels == 1 ? NIFTI_INTENT_LABEL : NIFTI_INTENT_NONE;
  im.byteorder = nifti_short_order();
  im.dim[0] = im.ndim = channels == 1 ? 3 : 4;
  im.dim[4] = im.nt = channels;
  for (int d = 5; d <= 7; ++d) im.dim[d] = 1;
  im.nu = im.nv = im.nw = 1;
  im.nvox = im.nx * im.ny * im.nz * channels;
  const std::string tmp = temporaryFor(path);
  std::free(im.fname);
  std::free(im.iname);
  im.fname = strdup(tmp.c_str());
  im.iname = strdup(tmp.c_str());
  nifti_free_extensions(&im);  // the input's extensions describe the input, not the result
  nifti_set_iname_offset(&im, im.nifti_type == NIFTI_FTYPE_NIFTI2_1 ? 2 : 1);
  const std::size_t bytes = std::size_t(im.nvox) * std::size_t(im.nbyper);
  im.data = const_cast<void*>(data);
  if (im.nifti_type == NIFTI_FTYPE_NIFTI2_1)
    writeNifti2(tmp, im);
  else
    nifti_image_write(&im);
  im.data = nullptr;  // not the library's to free
  // The library reports no failure (a full disk included): the file is read back instead.
  Image back(nifti_image_read(tmp.c_str(), /*read_data=*/1));
  const bool whole = back && back->data &&
                     std::size_t(back->nvox) * std::size_t(back->nbyper) == bytes &&
                     std::memcmp(back->data, data, bytes) == 0;
  std::error_code ec;
  if (!whole) {
    fs::remove(tmp, ec);
    const fs::space_info s = fs::space(
        fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path(), ec);
    fail(path, ": cannot write the NIfTI file (", bytes, " bytes of voxels; ",
         ec ? std::string("free space unknown") : std::to_string(s.available) + " bytes free", ")");
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    fail(path, ": cannot rename its temporary file into place");
  }
}

}  // namespace

void writeNiftiLabelsLike(const std::string& like, const std::string& path,
                          const std::uint8_t* labels) {
  write(like, path, DT_UINT8, 1, labels);
}

void writeNiftiChannelsLike(const std::string& like, const std::string& path, Index channels,
                            const float* values) {
  write(like, path, DT_FLOAT32, channels, values);
}

}  // namespace hybrid3d::generate
