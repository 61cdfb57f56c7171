#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/Hdf5.hpp>

#include <cstdint>
#include <fstream>

namespace hybrid3d::data {

template <>
hid_t nativeType<float>() {
  return H5T_NATIVE_FLOAT;
}
template <>
hid_t nativeType<double>() {
  return H5T_NATIVE_DOUBLE;
}
template <>
hid_t nativeType<int>() {
  return H5T_NATIVE_INT;
}
template <>
hid_t nativeType<std::int16_t>() {
  return H5T_NATIVE_INT16;
}
template <>
hid_t nativeType<std::int64_t>() {
  return H5T_NATIVE_INT64;
}
template <>
hid_t nativeType<std::uint8_t>() {
  return H5T_NATIVE_UINT8;
}

QuietErrors::QuietErrors() {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}
QuietErrors::~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

File::File(const std::string& path, MPI_Comm comm) : path_(path) {
  QuietErrors quiet;
  if (!std::ifstream(path).good()) fail(path, ": cannot open file (missing or unreadable)");
  if (H5Fis_hdf5(path.c_str()) <= 0) fail(path, ": not an HDF5 file (or truncated)");
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (comm != MPI_COMM_SELF) H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
  file_ = Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose);
  if (!file_.valid()) fail(path, ": HDF5 cannot open the file (damaged or truncated?)");
}

bool File::hasDataset(const std::string& name) const {
  QuietErrors quiet;
  const std::string rel = name[0] == '/' ? name.substr(1) : name;
  if (H5Lexists(file_, rel.c_str(), H5P_DEFAULT) <= 0) return false;
  H5O_info_t info;
  if (H5Oget_info_by_name(file_, rel.c_str(), &info, H5P_DEFAULT) < 0) return false;
  return info.type == H5O_TYPE_DATASET;
}

bool File::hasAttribute(const std::string& name) const {
  QuietErrors quiet;
  return H5Aexists(file_, name.c_str()) > 0;
}

Handle File::openDataset(const std::string& name) const {
  if (!hasDataset(name)) fail(path_, ": no dataset '", name, "'");
  QuietErrors quiet;
  Handle d(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid()) fail(path_, ": cannot open dataset '", name, "'");
  checkStored(d, path_, name);
  return d;
}

std::vector<Index> File::shape(const std::string& name) const {
  Handle d = openDataset(name);
  Handle s(H5Dget_space(d), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(s);
  if (rank < 0) fail(path_, ": cannot read the shape of '", name, "'");
  std::vector<hsize_t> dims(rank);
  H5Sget_simple_extent_dims(s, dims.data(), nullptr);
  return std::vector<Index>(dims.begin(), dims.end());
}

template <class T>
std::vector<T> File::read(const std::string& name) const {
  Handle d = openDataset(name);
  Index n = 1;
  for (Index e : shape(name)) n *= e;
  std::vector<T> out(static_cast<std::size_t>(n));
  QuietErrors quiet;
  if (H5Dread(d, nativeType<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0)
    fail(path_, ": cannot read dataset '", name, "' (truncated file or unconvertible type)");
  return out;
}
template std::vector<float> File::read<float>(const std::string&) const;
template std::vector<double> File::read<double>(const std::string&) const;
template std::vector<int> File::read<int>(const std::string&) const;
template std::vector<std::int16_t> File::read<std::int16_t>(const std::string&) const;
template std::vector<std::int64_t> File::read<std::int64_t>(const std::string&) const;

std::vector<std::string> File::attributeNames() const {
  QuietErrors quiet;
  std::vector<std::string> names;
  // By name: every file has that index (creation order only where it was tracked).
  auto collect = [](hid_t, const char* name, const H5A_info_t*, void* out) -> herr_t {
    static_cast<std::vector<std::string>*>(out)->push_back(name);
    return 0;
  };
  hsize_t next = 0;
  if (H5Aiterate2(file_, H5_INDEX_NAME, H5_ITER_INC, &next, collect, &names) < 0)
    fail(path_, ": cannot list the root attributes");
  return names;
}

bool File::attributeIsString(const std::string& name) const {
  if (!hasAttribute(name)) fail(path_, ": no attribute '", name, "'");
  QuietErrors quiet;
  Handle a(H5Aopen(file_, name.c_str(), H5P_DEFAULT), H5Aclose);
  Handle type(H5Aget_type(a), H5Tclose);
  return H5Tget_class(type) == H5T_STRING;
}

double File::attributeNumber(const std::string& name) const {
  if (!hasAttribute(name)) fail(path_, ": no attribute '", name, "'");
  QuietErrors quiet;
  Handle a(H5Aopen(file_, name.c_str(), H5P_DEFAULT), H5Aclose);
  Handle space(H5Aget_space(a), H5Sclose);
  if (H5Sget_simple_extent_npoints(space) != 1)
    fail(path_, ": attribute '", name, "' is not a single number");
  double v = 0;
  if (H5Aread(a, H5T_NATIVE_DOUBLE, &v) < 0)
    fail(path_, ": attribute '", name, "' is not a number");
  return v;
}

std::string File::attributeString(const std::string& name) const {
  if (!hasAttribute(name)) fail(path_, ": no attribute '", name, "'");
  const std::optional<std::string> value = stringAttribute(file_, name, path_);
  if (!value) fail(path_, ": attribute '", name, "' is not a string");
  return *value;
}

std::optional<std::string> stringAttribute(hid_t object, const std::string& name,
                                           const std::string& where) {
  QuietErrors quiet;
  if (H5Aexists(object, name.c_str()) <= 0) return std::nullopt;
  Handle a(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose);
  if (!a.valid()) fail(where, ": cannot open attribute '", name, "'");
  Handle type(H5Aget_type(a), H5Tclose);
  if (H5Tget_class(type) != H5T_STRING) return std::nullopt;
  Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_cset(mem, H5Tget_cset(type));
  if (H5Tis_variable_str(type) > 0) {
    H5Tset_size(mem, H5T_VARIABLE);
    char* s = nullptr;
    if (H5Aread(a, mem, &s) < 0) fail(where, ": cannot read attribute '", name, "'");
    std::string out = s ? s : "";
    Handle space(H5Aget_space(a), H5Sclose);
    H5Dvlen_reclaim(mem, space, H5P_DEFAULT, &s);
    return out;
  }
  // One byte more than stored: a NUL-padded "DHWC" of 4 bytes (h5py's np.bytes_) fills them
  // all, and a null-terminated copy of the same size would lose its last character.
  const std::size_t size = H5Tget_size(type);
  std::string out(size + 1, '\0');
  H5Tset_size(mem, size + 1);
  H5Tset_strpad(mem, H5T_STR_NULLTERM);
  if (H5Aread(a, mem, out.data()) < 0) fail(where, ": cannot read attribute '", name, "'");
  return out.substr(0, out.find('\0'));
}

}  // namespace hybrid3d::data
