// Test tool for the bad-input table (bad_inputs.table) and the format tests: copies an HDF5
// file and spoils or converts one thing.
//   make_bad_file SRC DST OP...
//   drop PATH                 the dataset PATH is missing
//   set PATH INDEX VALUE      element INDEX (row-major) of PATH becomes VALUE (nan, inf, -3 ...)
//   poke PATH INDEX VALUE     the same, written in place (the dataset's attributes kept)
//   retype PATH TYPE          PATH is stored as TYPE (float32, float64, int32, int16), same values
//   reshape PATH D0,D1,...    PATH gets another shape (values cut or padded with zeros)
//   channels-last PATH        PATH [C,D,H,W] becomes [D,H,W,C] with no layout attribute (as the
//                             published CosmoFlow files)
//   chunked PATH              PATH is stored in chunks (half each extent), deflate-compressed
//   attribute NAME VALUE      the root group's string attribute NAME is VALUE
//   attribute-nullpad NAME VALUE  the same as a fixed-length NUL-padded string (h5py's np.bytes_)
//   unwritten PATH            PATH is created (chunked) and never written
//   virtual PATH SOURCE       PATH is a virtual dataset mapping dataset PATH of file SOURCE
//                             (named as given; it need not exist)
//   external PATH KEEP        PATH is stored in the external file DST.raw (named by its absolute
//                             path), of which only the first KEEP bytes are left
//   filter PATH ID NAME       PATH is stored in chunks through filter ID called NAME (registered
//                             here as a byte copy: a filter the reader's HDF5 lacks, as h5py's LZF)
//   npy TYPE [MOD]...         instead of an HDF5 DST: /full as the numpy sample DST (NAME.data.npy,
//                             [D,H,W,C] of TYPE: int16, float32, float64, int16be) and /unitPar
//                             as NAME.label.npy float32 beside it (the MLPerf HPC release). MOD:
//                             cdhw (keep [C,D,H,W]), version2, fortran (the header says so),
//                             shape D0,D1,... (the header claims it), header-size N (the prefix
//                             claims an N-byte header), cut BYTES (the file ends there), nolabel,
//                             shape-again D0,D1,... (the dict gives 'shape' a second time, last).
// Datasets are rewritten through double, which every type the project stores converts to.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <hdf5.h>

#include "NpyBytes.hpp"

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "make_bad_file: %s\n", what.c_str());
  std::exit(2);
}

struct Dataset {
  std::vector<hsize_t> dims;
  hid_t type;  // file type (copied)
  std::vector<double> values;
  bool chunked = false;  // written in chunks of half each extent, deflate-compressed
};

std::vector<hsize_t> parseDims(const std::string& text) {
  std::istringstream in(text);
  std::vector<hsize_t> dims;
  std::string item;
  while (std::getline(in, item, ',')) dims.push_back(std::stoull(item));
  return dims;
}

// [C,D,H,W] values as [D,H,W,C].
std::vector<double> channelsLast(const std::vector<hsize_t>& dims, const std::vector<double>& v) {
  if (dims.size() != 4) die("channels-last needs a dataset of rank 4");
  const std::size_t C = dims[0], voxels = v.size() / C;
  std::vector<double> last(v.size());
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t i = 0; i < voxels; ++i) last[i * C + c] = v[c * voxels + i];
  return last;
}

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
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (ds.chunked) {
    std::vector<hsize_t> chunk = ds.dims;
    for (hsize_t& c : chunk) c = c > 1 ? (c + 1) / 2 : 1;
    H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
    H5Pset_deflate(dcpl, 4);
  }
  const hid_t d = H5Dcreate2(file, path.c_str(), ds.type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  H5Pclose(dcpl);
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

// Writes `values` (row-major, `dims`) as an .npy file of numpy type `descr`, with the header
// lies and damage `mods` asks for.
struct NpyOptions {
  std::string type = "int16";
  bool cdhw = false, fortran = false, version2 = false, label = true;
  std::string claimedShape;      // empty: the real one
  std::string secondShape;       // empty: 'shape' given once
  long long claimedHeader = -1;  // -1: the real header length
  long long cut = -1;            // -1: the whole file
};

template <class T>
void appendAs(std::string& out, const std::vector<double>& values, bool bigEndian) {
  for (double v : values) {
    const T x = static_cast<T>(v);
    char bytes[sizeof(T)];
    std::memcpy(bytes, &x, sizeof(T));
    if (bigEndian)
      for (std::size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(bytes[i], bytes[sizeof(T) - 1 - i]);
    out.append(bytes, sizeof(T));
  }
}

void writeNpy(const std::string& path, const std::vector<hsize_t>& dims,
              const std::vector<double>& values, const std::string& type, const NpyOptions& o) {
  std::string descr, data;
  if (type == "int16") {
    descr = "<i2";
    appendAs<std::int16_t>(data, values, false);
  } else if (type == "int16be") {
    descr = ">i2";
    appendAs<std::int16_t>(data, values, true);
  } else if (type == "float32") {
    descr = "<f4";
    appendAs<float>(data, values, false);
  } else if (type == "float64") {
    descr = "<f8";
    appendAs<double>(data, values, false);
  } else {
    die("unknown npy type " + type);
  }
  hybrid3d::test::NpyLayout layout;
  layout.descr = descr;
  layout.version = o.version2 ? 2 : 1;
  layout.fortran = o.fortran;
  layout.shapeText = o.claimedShape.empty() ? hybrid3d::test::npyShapeText(dims) : o.claimedShape;
  layout.claimedHeader = o.claimedHeader;
  layout.secondShapeText = o.secondShape;
  layout.cut = o.cut;
  const std::string file = hybrid3d::test::npyFileBytes(layout, data);
  std::ofstream(path, std::ios::binary).write(file.data(), std::streamsize(file.size()));
}

// make_bad_file SRC DST npy TYPE [MOD]...: see the top of the file.
int writeNpySample(hid_t src, const std::string& dst, int argc, char** argv, int first) {
  NpyOptions o;
  if (first >= argc) die("npy needs a type");
  o.type = argv[first];
  for (int i = first + 1; i < argc; ++i) {
    const std::string mod = argv[i];
    auto arg = [&]() -> std::string {
      if (i + 1 >= argc) die(mod + " needs a value");
      return argv[++i];
    };
    if (mod == "cdhw")
      o.cdhw = true;
    else if (mod == "fortran")
      o.fortran = true;
    else if (mod == "version2")
      o.version2 = true;
    else if (mod == "nolabel")
      o.label = false;
    else if (mod == "shape")
      o.claimedShape = arg();
    else if (mod == "shape-again")
      o.secondShape = arg();
    else if (mod == "header-size")
      o.claimedHeader = std::stoll(arg());
    else if (mod == "cut")
      o.cut = std::stoll(arg());
    else
      die("unknown npy modifier " + mod);
  }
  const std::string suffix = ".data.npy";
  if (dst.size() <= suffix.size() || dst.compare(dst.size() - suffix.size(), suffix.size(), suffix))
    die(dst + ": an npy sample's name ends in .data.npy");
  Dataset full = readDataset(src, "/full");
  std::vector<hsize_t> dims = full.dims;
  if (!o.cdhw) {
    full.values = channelsLast(dims, full.values);
    dims = {dims[1], dims[2], dims[3], dims[0]};
  }
  writeNpy(dst, dims, full.values, o.type, o);
  if (o.label) {
    const Dataset targets = readDataset(src, "/unitPar");
    writeNpy(dst.substr(0, dst.size() - suffix.size()) + ".label.npy", targets.dims, targets.values,
             "float32", NpyOptions{});
  }
  return 0;
}

// The operations' arguments, read one after another from the command line.
struct OperationArgs {
  int argc;
  char** argv;
  int i;
  std::string next(const std::string& op) {
    if (i + 1 >= argc) die(op + " needs more arguments");
    return argv[++i];
  }
};

// set P I V: element I of dataset P becomes V (the dataset rewritten, attributes dropped);
// poke P I V: the same written into the dataset in place, so its attributes (a checkpoint's
// checksum) stay, as after damage on disk.
void setValue(hid_t dst, const std::string& op, OperationArgs& a) {
  const std::string path = a.next(op);
  const std::size_t index = std::stoul(a.next(op));
  const double value = std::strtod(a.next(op).c_str(), nullptr);
  Dataset ds = readDataset(dst, path);
  if (index >= ds.values.size()) die("index outside " + path);
  ds.values[index] = value;
  if (op == "set") {
    writeDataset(dst, path, ds);
    return;
  }
  const hid_t d = H5Dopen2(dst, path.c_str(), H5P_DEFAULT);
  if (d < 0 || H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, ds.values.data()) < 0)
    die("cannot write " + path);
  H5Dclose(d);
}

// retype P T: dataset P stored as T (float64, float32, int32, int16).
void retype(hid_t dst, const std::string& path, const std::string& type) {
  Dataset ds = readDataset(dst, path);
  ds.type = type == "float64"   ? H5Tcopy(H5T_IEEE_F64LE)
            : type == "float32" ? H5Tcopy(H5T_IEEE_F32LE)
            : type == "int32"   ? H5Tcopy(H5T_STD_I32LE)
            : type == "int16"   ? H5Tcopy(H5T_STD_I16LE)
                                : (die("unknown type " + type), hid_t(-1));
  writeDataset(dst, path, ds);
}

// channels-last P: dataset P (C, D, H, W) stored as (D, H, W, C), the layout attribute dropped.
void toChannelsLast(hid_t dst, const std::string& path) {
  Dataset ds = readDataset(dst, path);
  ds.values = channelsLast(ds.dims, ds.values);
  ds.dims = {ds.dims[1], ds.dims[2], ds.dims[3], ds.dims[0]};
  writeDataset(dst, path, ds);
  if (H5Aexists(dst, "layout") > 0) H5Adelete(dst, "layout");
}

// attribute NAME VALUE: the root group's string attribute NAME set to VALUE, a fixed-length
// string of VALUE's length padded with `pad` (HDF5's default NUL termination, or h5py's
// NUL padding of a numpy bytes_ value).
void writeRootAttribute(hid_t dst, const std::string& name, const std::string& value,
                        H5T_str_t pad = H5T_STR_NULLTERM) {
  if (H5Aexists(dst, name.c_str()) > 0) H5Adelete(dst, name.c_str());
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, value.size());
  H5Tset_strpad(type, pad);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(dst, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0 || H5Awrite(a, type, value.data()) < 0) die("cannot write attribute " + name);
  H5Aclose(a);
  H5Sclose(space);
  H5Tclose(type);
}

// reshape P DIMS: dataset P given the extents DIMS, its values cut or padded with zeros.
void reshape(hid_t dst, const std::string& path, const std::string& dims) {
  Dataset ds = readDataset(dst, path);
  ds.dims = parseDims(dims);
  std::size_t n = 1;
  for (hsize_t d : ds.dims) n *= d;
  ds.values.resize(n, 0.0);
  writeDataset(dst, path, ds);
}

// The dataset PATH of dst recreated empty by `make` (given the file's space and type), its old
// values returned.
template <class Make>
Dataset recreate(hid_t dst, const std::string& path, Make make) {
  const Dataset ds = readDataset(dst, path);
  H5Ldelete(dst, path.c_str(), H5P_DEFAULT);
  const hid_t space = H5Screate_simple(int(ds.dims.size()), ds.dims.data(), nullptr);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  make(dcpl, ds);
  const hid_t d = H5Dcreate2(dst, path.c_str(), ds.type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (d < 0) die("cannot create " + path);
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(space);
  return ds;
}

void writeValues(hid_t dst, const std::string& path, const Dataset& ds) {
  const hid_t d = H5Dopen2(dst, path.c_str(), H5P_DEFAULT);
  if (d < 0 || H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, ds.values.data()) < 0)
    die("cannot write " + path);
  H5Dclose(d);
}

void chunkHalves(hid_t dcpl, const Dataset& ds) {
  std::vector<hsize_t> chunk = ds.dims;
  for (hsize_t& c : chunk) c = c > 1 ? (c + 1) / 2 : 1;
  H5Pset_chunk(dcpl, int(chunk.size()), chunk.data());
}

// A filter that copies its bytes, registered under another filter's id and name.
size_t copyFilter(unsigned, size_t, const unsigned[], size_t bytes, size_t*, void**) {
  return bytes;
}

// filter P ID NAME: P stored in chunks through filter ID, written by this tool's copy of it.
void storeFiltered(hid_t dst, const std::string& path, int id, const std::string& name) {
  static std::string registeredName;
  registeredName = name;
  H5Z_class2_t filter{H5Z_CLASS_T_VERS,       H5Z_filter_t(id), 1,       1,
                      registeredName.c_str(), nullptr,          nullptr, copyFilter};
  if (H5Zregister(&filter) < 0) die("cannot register filter " + name);
  const Dataset ds = recreate(dst, path, [&](hid_t dcpl, const Dataset& d) {
    chunkHalves(dcpl, d);
    H5Pset_filter(dcpl, H5Z_filter_t(id), H5Z_FLAG_MANDATORY, 0, nullptr);
  });
  writeValues(dst, path, ds);
}

// external P KEEP: P stored in DST.raw (absolute name), which is then cut to KEEP bytes.
void storeExternal(hid_t dst, const std::string& dstPath, const std::string& path,
                   unsigned long long keep) {
  const std::string raw = std::filesystem::absolute(dstPath + ".raw").string();
  const Dataset ds = recreate(dst, path, [&](hid_t dcpl, const Dataset& d) {
    std::size_t n = H5Tget_size(d.type);
    for (hsize_t e : d.dims) n *= e;
    H5Pset_external(dcpl, raw.c_str(), 0, n);
  });
  writeValues(dst, path, ds);
  H5Fflush(dst, H5F_SCOPE_GLOBAL);
  std::filesystem::resize_file(raw, keep);
}

// virtual P SOURCE: P maps the whole of dataset P in file SOURCE.
void storeVirtual(hid_t dst, const std::string& path, const std::string& source) {
  recreate(dst, path, [&](hid_t dcpl, const Dataset& d) {
    const hid_t space = H5Screate_simple(int(d.dims.size()), d.dims.data(), nullptr);
    if (H5Pset_virtual(dcpl, space, source.c_str(), path.c_str(), space) < 0)
      die("cannot map " + path + " to " + source);
    H5Sclose(space);
  });
}

// The operations from argv[first] on, in order, on the copy dst.
void applyOperations(hid_t dst, const std::string& dstPath, int argc, char** argv, int first) {
  OperationArgs a{argc, argv, first - 1};
  while (++a.i < argc) {
    const std::string op = argv[a.i];
    if (op == "drop") {
      const std::string path = a.next(op);
      if (H5Ldelete(dst, path.c_str(), H5P_DEFAULT) < 0) die("no object " + path);
    } else if (op == "set" || op == "poke") {
      setValue(dst, op, a);
    } else if (op == "retype") {
      const std::string path = a.next(op);
      retype(dst, path, a.next(op));
    } else if (op == "channels-last") {
      toChannelsLast(dst, a.next(op));
    } else if (op == "chunked") {
      const std::string path = a.next(op);
      Dataset ds = readDataset(dst, path);
      ds.chunked = true;
      writeDataset(dst, path, ds);
    } else if (op == "attribute") {
      const std::string name = a.next(op);
      writeRootAttribute(dst, name, a.next(op));
    } else if (op == "attribute-nullpad") {
      const std::string name = a.next(op);
      writeRootAttribute(dst, name, a.next(op), H5T_STR_NULLPAD);
    } else if (op == "unwritten") {
      const std::string path = a.next(op);
      recreate(dst, path, chunkHalves);
    } else if (op == "virtual") {
      const std::string path = a.next(op);
      storeVirtual(dst, path, a.next(op));
    } else if (op == "external") {
      const std::string path = a.next(op);
      storeExternal(dst, dstPath, path, std::stoull(a.next(op)));
    } else if (op == "filter") {
      const std::string path = a.next(op);
      const int id = std::stoi(a.next(op));
      storeFiltered(dst, path, id, a.next(op));
    } else if (op == "reshape") {
      const std::string path = a.next(op);
      reshape(dst, path, a.next(op));
    } else {
      die("unknown operation " + op);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3)
    die("usage: make_bad_file SRC DST [drop P | set P I V | poke P I V | retype P T | reshape P "
        "DIMS]...");
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  hid_t src = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
  if (src < 0) die(std::string("cannot open ") + argv[1]);
  if (argc > 3 && std::string(argv[3]) == "npy") return writeNpySample(src, argv[2], argc, argv, 4);
  hid_t dst = H5Fcreate(argv[2], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (dst < 0) die(std::string("cannot create ") + argv[2]);
  if (H5Literate(src, H5_INDEX_NAME, H5_ITER_INC, nullptr, copyChild, &dst) < 0)
    die("cannot copy the objects of the root group");
  if (H5Aiterate2(src, H5_INDEX_NAME, H5_ITER_INC, nullptr, copyAttribute, &dst) < 0)
    die("cannot copy the attributes of the root group");
  applyOperations(dst, argv[2], argc, argv, 3);
  H5Fclose(dst);
  H5Fclose(src);
  return 0;
}
