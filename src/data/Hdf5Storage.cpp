// Whether a dataset's values are really stored (data::checkStored, Hdf5.hpp). HDF5 reads the
// fill value, zeros, wherever nothing is stored: a dataset created and never written, a virtual
// dataset whose source file is gone, an external file shorter than declared. A sample of zeros
// trains without complaint, so these are refused before the read.
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/Hdf5.hpp>

#include <cstdlib>
#include <algorithm>
#include <filesystem>

namespace hybrid3d::data {
namespace {

namespace fs = std::filesystem;

// A string property read by an HDF5 getter of the (buffer, size) kind.
template <class Getter>
std::string propertyText(Getter get) {
  const auto length = get(nullptr, 0);
  if (length <= 0) return "";
  std::string text(static_cast<std::size_t>(length) + 1, '\0');
  get(text.data(), text.size());
  text.resize(static_cast<std::size_t>(length));
  return text;
}

// Every filter of the pipeline must be one this HDF5 library can decode.
void checkFilters(hid_t dcpl, const std::string& where) {
  const int filters = H5Pget_nfilters(dcpl);
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t values = 0;
    char name[256] = {};
    const H5Z_filter_t id =
        H5Pget_filter2(dcpl, unsigned(i), &flags, &values, nullptr, sizeof name, name, &config);
    if (id < 0) fail(where, ": cannot read its filter pipeline");
    unsigned info = 0;
    if (H5Zfilter_avail(id) > 0 && H5Zget_filter_info(id, &info) >= 0 &&
        (info & H5Z_FILTER_CONFIG_DECODE_ENABLED))
      continue;
    fail(where, " is stored with filter '", name[0] ? name : "unnamed", "' (HDF5 filter ", id,
         "), which this HDF5 library cannot decode", id == 32000 ? " (LZF is h5py's own)" : "",
         "; rewrite it with gzip compression or none");
  }
}

// The external files of a contiguous dataset must hold its bytes (HDF5 reads zeros past their
// end). Relative names are found as HDF5 finds them: HDF5_EXTFILE_PREFIX, else the access
// property's prefix (${ORIGIN}: the file's folder), else the working directory.
void checkExternal(hid_t dataset, hid_t dcpl, std::uint64_t bytes, const std::string& path,
                   const std::string& where) {
  const int files = H5Pget_external_count(dcpl);
  Handle dapl(H5Dget_access_plist(dataset), H5Pclose);
  const char* env = std::getenv("HDF5_EXTFILE_PREFIX");
  std::string prefix = env && *env ? std::string(env) : propertyText([&](char* s, std::size_t n) {
    return H5Pget_efile_prefix(dapl, s, n);
  });
  if (prefix.rfind("${ORIGIN}", 0) == 0)
    prefix = fs::path(path).parent_path().string() + prefix.substr(9);
  for (int i = 0; i < files && bytes > 0; ++i) {
    char name[4096] = {};
    off_t offset = 0;
    hsize_t size = 0;
    if (H5Pget_external(dcpl, unsigned(i), sizeof name, name, &offset, &size) < 0)
      fail(where, ": cannot read its external file list");
    const std::uint64_t part = std::min<std::uint64_t>(bytes, size);
    fs::path file(name);
    if (file.is_relative() && !prefix.empty() && prefix != ".") file = fs::path(prefix) / file;
    std::error_code ec;
    const std::uint64_t held = fs::file_size(file, ec);
    if (ec || held < std::uint64_t(offset) + part)
      fail(where, " keeps ", part, " bytes in external file ", file.string(), " from byte ", offset,
           ", but that file ",
           ec ? "cannot be read (" + ec.message() + ")"
              : "holds " + std::to_string(held) + " bytes");
    bytes -= part;
  }
}

// The source dataset of every mapping of a virtual dataset must exist and be stored (HDF5 reads
// the fill value for a missing one). Relative file names are looked up beside the virtual
// dataset's file, then in the working directory, as HDF5 does without HDF5_VDS_PREFIX.
void checkVirtual(hid_t dcpl, const std::string& path, const std::string& where, int depth) {
  std::size_t mappings = 0;
  if (H5Pget_virtual_count(dcpl, &mappings) < 0) fail(where, ": cannot read its virtual mappings");
  for (std::size_t i = 0; i < mappings; ++i) {
    const std::string file = propertyText(
        [&](char* s, std::size_t n) { return H5Pget_virtual_filename(dcpl, i, s, n); });
    const std::string name = propertyText(
        [&](char* s, std::size_t n) { return H5Pget_virtual_dsetname(dcpl, i, s, n); });
    std::vector<std::string> candidates{file == "." ? path : file};
    if (file != "." && fs::path(file).is_relative())
      candidates.insert(candidates.begin(), (fs::path(path).parent_path() / file).string());
    bool found = false;
    for (const std::string& source : candidates) {
      if (!fs::is_regular_file(source) || H5Fis_hdf5(source.c_str()) <= 0) continue;
      Handle f(H5Fopen(source.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
      if (!f.valid() || H5Lexists(f, name.c_str(), H5P_DEFAULT) <= 0) continue;
      Handle d(H5Dopen2(f, name.c_str(), H5P_DEFAULT), H5Dclose);
      if (!d.valid()) continue;
      checkStored(d, source, name, depth + 1);
      found = true;
      break;
    }
    if (!found)
      fail(where, " is virtual, and its source dataset '", name, "' in ", file,
           " is missing (HDF5 would read fill values in its place)");
  }
}

[[noreturn]] void neverWritten(const std::string& where) {
  fail(where,
       " was created but never written (HDF5 would read fill values): the writer stopped"
       " early");
}

// Every chunk of a chunked dataset must be stored. (HDF5 1.10's H5Dget_space_status calls a
// fully written dataset with partial edge chunks "part allocated", so the chunks are counted.)
void checkChunks(hid_t dataset, hid_t dcpl, hid_t space, const std::string& where) {
  const int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(std::size_t(std::max(rank, 0))), chunk(dims.size());
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  if (H5Pget_chunk(dcpl, rank, chunk.data()) != rank) fail(where, ": cannot read its chunk shape");
  hsize_t expected = 1, stored = 0;
  for (std::size_t d = 0; d < dims.size(); ++d) expected *= (dims[d] + chunk[d] - 1) / chunk[d];
  if (H5Dget_num_chunks(dataset, space, &stored) < 0) fail(where, ": cannot count its chunks");
  if (stored == 0) neverWritten(where);
  if (stored < expected)
    fail(where, " was written only in part (", stored, " of its ", expected,
         " chunks stored; HDF5 would read fill values for the others)");
}

}  // namespace

void checkStored(hid_t dataset, const std::string& path, const std::string& name, int depth) {
  QuietErrors quiet;
  const std::string where = path + ": dataset '" + name + "'";
  if (depth > 8) fail(where, " is virtual through more than 8 levels (a cycle?)");
  Handle space(H5Dget_space(dataset), H5Sclose);
  Handle type(H5Dget_type(dataset), H5Tclose);
  const hssize_t points = H5Sget_simple_extent_npoints(space);
  if (points <= 0) return;  // nothing to store
  Handle dcpl(H5Dget_create_plist(dataset), H5Pclose);
  checkFilters(dcpl, where);
  const H5D_layout_t layout = H5Pget_layout(dcpl);
  if (layout == H5D_VIRTUAL) return checkVirtual(dcpl, path, where, depth);
  if (H5Pget_external_count(dcpl) > 0)
    return checkExternal(dataset, dcpl, std::uint64_t(points) * H5Tget_size(type), path, where);
  if (layout == H5D_CHUNKED) return checkChunks(dataset, dcpl, space, where);
  H5D_space_status_t status = H5D_SPACE_STATUS_ERROR;
  if (H5Dget_space_status(dataset, &status) < 0) fail(where, ": cannot tell what it stores");
  if (status == H5D_SPACE_STATUS_NOT_ALLOCATED) neverWritten(where);
}

}  // namespace hybrid3d::data
