#pragma once
// Small sample files for the reader tests, written with the HDF5 C API in every layout the
// reader accepts (and some it must refuse), plus a scratch directory shared by all ranks.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/data/Hdf5.hpp>

#include "NpyBytes.hpp"

namespace hybrid3d::test {

// One sample's global content: input [C,D,H,W] with integral values (so that int16 and float32
// files hold the same numbers), labels [D,H,W], targets.
struct SampleData {
  int channels = 0;
  Index3 extents{0, 0, 0};
  std::vector<float> input;
  std::vector<int> labels;
  std::vector<float> targets;
  float at(int c, Index d, Index h, Index w) const {
    return input[std::size_t(((c * extents[0] + d) * extents[1] + h) * extents[2] + w)];
  }
};

inline SampleData makeSample(int channels, const Index3& e, unsigned seed, int lo = -300,
                             int hi = 300) {
  SampleData s;
  s.channels = channels;
  s.extents = e;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi), cls(0, 2);
  s.input.resize(std::size_t(channels * e[0] * e[1] * e[2]));
  for (float& v : s.input) v = float(u(rng));
  s.labels.resize(std::size_t(e[0] * e[1] * e[2]));
  for (int& v : s.labels) v = cls(rng);
  std::uniform_real_distribution<float> t(-1, 1);
  s.targets = {t(rng), t(rng), t(rng), t(rng)};
  return s;
}

// DHWC: the attribute layout = "DHWC" on the root group; DHWCOnDataset: on the dataset;
// DHWCh5py: on the dataset as h5py writes a Python str (variable-length, UTF-8); DHWCBare: none
// (the published CosmoFlow files, recognised by their shape).
enum class TestLayout { CDHW, DHWC, DHWCOnDataset, DHWCh5py, DHWCBare };

// `chunked`: stored in chunks of about half each extent, deflate-compressed (as h5py's
// compression="gzip" writes), so a rank's box crosses chunk boundaries.
inline void writeDataset(hid_t file, const std::string& name, hid_t fileType, hid_t memType,
                         const std::vector<hsize_t>& dims, const void* data, bool chunked = false) {
  data::Handle space(H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose);
  data::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (chunked) {
    std::vector<hsize_t> chunk(dims);
    for (hsize_t& c : chunk) c = (c + 1) / 2;
    H5Pset_chunk(dcpl, int(chunk.size()), chunk.data());
    H5Pset_deflate(dcpl, 4);
  }
  data::Handle d(H5Dcreate2(file, name.c_str(), fileType, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                 H5Dclose);
  ASSERT_GE(H5Dwrite(d, memType, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), 0) << name;
}

inline void writeStringAttribute(hid_t obj, const char* name, const std::string& value) {
  data::Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, value.size());
  data::Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  data::Handle a(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  H5Awrite(a, type, value.data());
}

// As h5py stores a Python str: a variable-length string in the UTF-8 character set.
inline void writeUtf8StringAttribute(hid_t obj, const char* name, const std::string& value) {
  data::Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  data::Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  data::Handle a(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const char* text = value.c_str();
  H5Awrite(a, type, &text);
}

// The HDF5 types the tests store, named by an enum rather than held as hid_t: HDF5's H5T_*
// macros are comma expressions `(H5open(), H5T_X_g)`, and nvcc's front end drops their
// parentheses inside braced initialisers and default member initialisers, so
// `{"/full", H5T_STD_I16LE}` (or `{}` with an H5T_* default) became a list holding a void
// expression. hdf5Type() turns the name into the handle where it is used.
enum class FileType {
  NativeFloat,
  NativeInt,
  Float32LE,
  Float64LE,
  Int16LE,
  Int16BE,
  Int32LE,
  UInt8LE
};

inline hid_t hdf5Type(FileType t) {
  switch (t) {
    case FileType::NativeFloat:
      return H5T_NATIVE_FLOAT;
    case FileType::NativeInt:
      return H5T_NATIVE_INT;
    case FileType::Float32LE:
      return H5T_IEEE_F32LE;
    case FileType::Float64LE:
      return H5T_IEEE_F64LE;
    case FileType::Int16LE:
      return H5T_STD_I16LE;
    case FileType::Int16BE:
      return H5T_STD_I16BE;
    case FileType::Int32LE:
      return H5T_STD_I32LE;
    case FileType::UInt8LE:
      return H5T_STD_U8LE;
  }
  return H5I_INVALID_HID;
}

struct WriteOptions {
  std::string input = "/full";
  FileType fileType = FileType::NativeFloat;  // the stored type of the input
  TestLayout layout = TestLayout::CDHW;
  bool labels = false;
  FileType labelType = FileType::NativeInt;
  bool targets = true;
  bool chunked = false;  // the input chunked and deflate-compressed
  std::string targetsName = "/unitPar";
};

// The sample's input [C,D,H,W] reordered as [D,H,W,C].
inline std::vector<float> channelsLastOf(const SampleData& s) {
  const std::size_t C = std::size_t(s.channels), voxels = s.input.size() / C;
  std::vector<float> last(s.input.size());
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t i = 0; i < voxels; ++i) last[i * C + c] = s.input[c * voxels + i];
  return last;
}

// Writes `s` to `path` (one rank only).
inline void writeSample(const std::string& path, const SampleData& s, const WriteOptions& o) {
  data::Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  ASSERT_TRUE(f.valid()) << path;
  const hsize_t C = hsize_t(s.channels), D = hsize_t(s.extents[0]), H = hsize_t(s.extents[1]),
                W = hsize_t(s.extents[2]);
  if (o.layout == TestLayout::CDHW) {
    writeDataset(f, o.input, hdf5Type(o.fileType), H5T_NATIVE_FLOAT, {C, D, H, W}, s.input.data(),
                 o.chunked);
  } else {
    const std::vector<float> last = channelsLastOf(s);
    writeDataset(f, o.input, hdf5Type(o.fileType), H5T_NATIVE_FLOAT, {D, H, W, C}, last.data(),
                 o.chunked);
    if (o.layout == TestLayout::DHWC) {
      writeStringAttribute(f, "layout", "DHWC");
    } else if (o.layout == TestLayout::DHWCOnDataset) {
      data::Handle d(H5Dopen2(f, o.input.c_str(), H5P_DEFAULT), H5Dclose);
      writeStringAttribute(d, "layout", "DHWC");
    } else if (o.layout == TestLayout::DHWCh5py) {
      data::Handle d(H5Dopen2(f, o.input.c_str(), H5P_DEFAULT), H5Dclose);
      writeUtf8StringAttribute(d, "layout", "DHWC");
    }
  }
  if (o.labels)
    writeDataset(f, "/segmentation", hdf5Type(o.labelType), H5T_NATIVE_INT, {D, H, W},
                 s.labels.data());
  if (o.targets)
    writeDataset(f, o.targetsName, H5T_NATIVE_FLOAT, H5T_NATIVE_FLOAT, {4}, s.targets.data());
}

// A NumPy .npy file, written byte by byte as numpy.save does (format version 1.0, or 2.0/3.0
// with a 4-byte header length), with the lies the bad-file tests need.
// descr also picks how the values are written: <f4, <f8 (converted), anything else 2 bytes each
// (int16); an empty shapeText is the true shape.
using NpyWrite = NpyLayout;

inline void writeNpy(const std::string& path, const std::vector<Index>& shape,
                     const std::vector<float>& values, const NpyWrite& o = {}) {
  std::string data;
  for (float v : values) {
    if (o.descr == "<f4") {
      data.append(reinterpret_cast<const char*>(&v), 4);
    } else if (o.descr == "<f8") {
      const double x = v;
      data.append(reinterpret_cast<const char*>(&x), 8);
    } else {
      const std::int16_t x = std::int16_t(v);
      data.append(reinterpret_cast<const char*>(&x), 2);
    }
  }
  NpyLayout layout = o;
  if (layout.shapeText.empty()) layout.shapeText = npyShapeText(shape);
  const std::string file = npyFileBytes(layout, data);
  std::ofstream(path, std::ios::binary).write(file.data(), std::streamsize(file.size()));
}

// Sample `s` as NAME.data.npy (`channelsLast`: [D,H,W,C], else [C,D,H,W]) beside
// NAME.label.npy float32 [4]; `path` is NAME.data.npy.
inline void writeNpySample(const std::string& path, const SampleData& s, bool channelsLast,
                           const NpyWrite& o = {}) {
  const Index C = s.channels;
  const Index3& e = s.extents;
  if (channelsLast)
    writeNpy(path, {e[0], e[1], e[2], C}, channelsLastOf(s), o);
  else
    writeNpy(path, {C, e[0], e[1], e[2]}, s.input, o);
  NpyWrite label;
  label.descr = "<f4";
  writeNpy(path.substr(0, path.size() - 9) + ".label.npy", {4}, s.targets, label);
}

// A directory under /tmp shared by every rank of the world, removed after the tests.
class ScratchDir : public ::testing::Environment {
public:
  static const std::string& path() { return path_; }
  void SetUp() override {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char name[256] = {};
    if (rank == 0) {
      std::string p = (std::filesystem::temp_directory_path() / "hybrid3d_io_testXXXXXX").string();
      std::vector<char> buf(p.begin(), p.end());
      buf.push_back('\0');
      if (!mkdtemp(buf.data())) buf = {'\0'};
      std::snprintf(name, sizeof(name), "%s", buf.data());
    }
    MPI_Bcast(name, sizeof(name), MPI_CHAR, 0, MPI_COMM_WORLD);
    path_ = name;
  }
  void TearDown() override {
    MPI_Barrier(MPI_COMM_WORLD);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0 && !path_.empty()) std::filesystem::remove_all(path_);
  }

private:
  static inline std::string path_;
};

// Rank 0 of the world runs `write` (file creation), then everyone waits for it.
template <class F>
void onRankZero(F&& write) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) write();
  MPI_Barrier(MPI_COMM_WORLD);
}

inline std::string scratch(const std::string& name) { return ScratchDir::path() + "/" + name; }

}  // namespace hybrid3d::test
