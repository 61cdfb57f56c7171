// Test tool for the bad-input table (bad_inputs.table): copies an HDF5 file and spoils one thing.
//   make_bad_file SRC DST OP...
//   drop PATH                 the dataset PATH is missing
//   set PATH INDEX VALUE      element INDEX (row-major) of PATH becomes VALUE (nan, inf, -3 ...)
//   poke PATH INDEX VALUE     the same, written in place (the dataset's attributes kept)
//   retype PATH TYPE          PATH is stored as TYPE (float32, float64, int32), same values
//   reshape PATH D0,D1,...    PATH gets another shape (values cut or padded with zeros)
// Datasets are rewritten through double, which every type the project stores converts to.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <hdf5.h>

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "make_bad_file: %s\n", what.c_str());
  std::exit(2);
}

struct Dataset {
  std::vector<hsize_t> dims;
  hid_t type;  // file type (copied)
  std::vector<double> values;
};

Dataset readDataset(hid_t file, const std::string& path) {
  const hid_t d = H5Dopen2(file, path.c_str(), H5P_DEFAULT);
  if (d < 0) die("no dataset " + path);
  const hid_t space = H5Dget_space(d);
  Dataset out;
  out.dims.resize(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space)));
  H5Sget_simple_extent_dims(space, out.dims.data(), nullptr);
  out.type = H5Tcopy(H5Dget_type(d));
  out.values.resize(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
  if (H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.values.data()) < 0)
    die("cannot read " + path);
  H5Sclose(space);
  H5Dclose(d);
  return out;
}

void writeDataset(hid_t file, const std::string& path, const Dataset& ds) {
  H5Ldelete(file, path.c_str(), H5P_DEFAULT);
  const hid_t space = H5Screate_simple(static_cast<int>(ds.dims.size()), ds.dims.data(), nullptr);
  const hid_t d =
      H5Dcreate2(file, path.c_str(), ds.type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (d < 0) die("cannot create " + path);
  // Conversion exceptions (NaN into an integer type) are the point of some cases: write as is.
  if (H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, ds.values.data()) < 0)
    die("cannot write " + path);
  H5Dclose(d);
  H5Sclose(space);
}

herr_t copyChild(hid_t src, const char* name, const H5L_info_t*, void* dst) {
  return H5Ocopy(src, name, *static_cast<hid_t*>(dst), name, H5P_DEFAULT, H5P_DEFAULT);
}

// Root-group attributes (a checkpoint's deck, a sample's layout), copied as stored.
herr_t copyAttribute(hid_t src, const char* name, const H5A_info_t*, void* dst) {
  const hid_t a = H5Aopen(src, name, H5P_DEFAULT);
  const hid_t type = H5Aget_type(a), space = H5Aget_space(a);
  std::vector<char> bytes(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)) *
                          H5Tget_size(type));
  H5Aread(a, type, bytes.data());  // variable-length strings: pointers, valid until exit
  const hid_t b =
      H5Acreate2(*static_cast<hid_t*>(dst), name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  const herr_t ok = H5Awrite(b, type, bytes.data());
  H5Aclose(b);
  H5Sclose(space);
  H5Tclose(type);
  H5Aclose(a);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3)
    die("usage: make_bad_file SRC DST [drop P | set P I V | poke P I V | retype P T | reshape P "
        "DIMS]...");
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  hid_t src = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
  if (src < 0) die(std::string("cannot open ") + argv[1]);
  hid_t dst = H5Fcreate(argv[2], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (dst < 0) die(std::string("cannot create ") + argv[2]);
  if (H5Literate(src, H5_INDEX_NAME, H5_ITER_INC, nullptr, copyChild, &dst) < 0)
    die("cannot copy the objects of the root group");
  if (H5Aiterate2(src, H5_INDEX_NAME, H5_ITER_INC, nullptr, copyAttribute, &dst) < 0)
    die("cannot copy the attributes of the root group");
  for (int i = 3; i < argc; ++i) {
    const std::string op = argv[i];
    auto arg = [&]() -> std::string {
      if (i + 1 >= argc) die(op + " needs more arguments");
      return argv[++i];
    };
    if (op == "drop") {
      const std::string path = arg();
      if (H5Ldelete(dst, path.c_str(), H5P_DEFAULT) < 0) die("no object " + path);
    } else if (op == "set" || op == "poke") {
      const std::string path = arg();
      const std::size_t index = std::stoul(arg());
      const double value = std::strtod(arg().c_str(), nullptr);
      Dataset ds = readDataset(dst, path);
      if (index >= ds.values.size()) die("index outside " + path);
      ds.values[index] = value;
      if (op == "set") {
        writeDataset(dst, path, ds);
        continue;
      }
      // poke: written into the dataset in place, so its attributes (a checkpoint's checksum)
      // stay, as after damage on disk.
      const hid_t d = H5Dopen2(dst, path.c_str(), H5P_DEFAULT);
      if (d < 0 ||
          H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, ds.values.data()) < 0)
        die("cannot write " + path);
      H5Dclose(d);
    } else if (op == "retype") {
      const std::string path = arg(), type = arg();
      Dataset ds = readDataset(dst, path);
      ds.type = type == "float64"   ? H5Tcopy(H5T_IEEE_F64LE)
                : type == "float32" ? H5Tcopy(H5T_IEEE_F32LE)
                : type == "int32"   ? H5Tcopy(H5T_STD_I32LE)
                                    : (die("unknown type " + type), hid_t(-1));
      writeDataset(dst, path, ds);
    } else if (op == "reshape") {
      const std::string path = arg();
      std::istringstream in(arg());
      Dataset ds = readDataset(dst, path);
      ds.dims.clear();
      std::string item;
      std::size_t n = 1;
      while (std::getline(in, item, ',')) {
        ds.dims.push_back(std::stoull(item));
        n *= ds.dims.back();
      }
      ds.values.resize(n, 0.0);
      writeDataset(dst, path, ds);
    } else {
      die("unknown operation " + op);
    }
  }
  H5Fclose(dst);
  H5Fclose(src);
  return 0;
}
