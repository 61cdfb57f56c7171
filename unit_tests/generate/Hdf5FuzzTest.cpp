// The HDF5 sample reader (data::SampleReader, one rank) against random sample files: stored
// types, channels first or last, layout attributes in every string form h5py and HDF5 write,
// contiguous, chunked, compressed, external and virtual storage, storage never or partly
// written, sources and external files missing or short, filters this HDF5 lacks, bad targets,
// and files cut short. Each case is built from parameters, so the test knows what the file
// holds: it must be refused in one line, or read as exactly those values; never a signal or a
// hang.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <hdf5.h>

#include <hybrid3d/data/SampleReader.hpp>

#include "FuzzCase.hpp"
#include "GenerateTestUtils.hpp"

namespace {

using namespace hybrid3d;
using test::Expected;
namespace fs = std::filesystem;

constexpr int C = 2;
constexpr H5Z_filter_t kMissingFilter = 32000;  // h5py's LZF: registered here only to write

enum class Storage {
  Contiguous,
  Chunked,
  Deflate,
  MissingFilter,
  Unwritten,
  PartWritten,
  External,
  ExternalShort,
  Virtual,
  VirtualMissing,
  Count
};
enum class Attribute { None, VariableUtf8, NullTerm, NullPad, SpacePad, Count };
enum class Stored { Float32, Int16, Float64, Int32, Count };
enum class Targets { Float32, Float64, Missing, Short, NaN, Count };

struct Case {
  Index3 extents{3, 4, 5};
  bool channelsLast = false;
  Stored stored = Stored::Float32;
  Storage storage = Storage::Contiguous;
  Attribute attribute = Attribute::None;
  bool attributeOnRoot = false, attributeContradicts = false;
  Targets targets = Targets::Float32;
  double cut = 1;              // the fraction of the file kept
  std::vector<double> values;  // in the file's order
};

std::size_t copyFilter(unsigned, std::size_t, const unsigned[], std::size_t n, std::size_t*,
                       void**) {
  return n;
}

void writeString(hid_t object, const std::string& value, Attribute kind) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  if (kind == Attribute::VariableUtf8) {
    H5Tset_size(type, H5T_VARIABLE);
    H5Tset_cset(type, H5T_CSET_UTF8);
  } else {
    H5Tset_size(type, value.size());
    H5Tset_strpad(type, kind == Attribute::NullTerm  ? H5T_STR_NULLTERM
                        : kind == Attribute::NullPad ? H5T_STR_NULLPAD
                                                     : H5T_STR_SPACEPAD);
  }
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(object, "layout", type, space, H5P_DEFAULT, H5P_DEFAULT);
  const char* text = value.c_str();
  H5Awrite(a, type, kind == Attribute::VariableUtf8 ? static_cast<const void*>(&text) : text);
  H5Aclose(a);
  H5Sclose(space);
  H5Tclose(type);
}

hid_t fileType(Stored s) {
  return s == Stored::Float32   ? H5T_IEEE_F32LE
         : s == Stored::Int16   ? H5T_STD_I16LE
         : s == Stored::Float64 ? H5T_IEEE_F64LE
                                : H5T_STD_I32LE;
}

// /full of case `k` in file `f` (its dims `dims`), stored as the case says; `path` names the
// file (external and virtual storage lie beside it).
void writeFull(hid_t f, const std::string& path, const Case& k, const std::vector<hsize_t>& dims) {
  const hid_t space = H5Screate_simple(4, dims.data(), nullptr);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  const hsize_t chunk[4] = {(dims[0] + 1) / 2, (dims[1] + 1) / 2, dims[2], dims[3]};
  const bool chunked = k.storage == Storage::Chunked || k.storage == Storage::Deflate ||
                       k.storage == Storage::MissingFilter || k.storage == Storage::Unwritten ||
                       k.storage == Storage::PartWritten;
  if (chunked) H5Pset_chunk(dcpl, 4, chunk);
  if (k.storage == Storage::Deflate) H5Pset_deflate(dcpl, 4);
  if (k.storage == Storage::MissingFilter) H5Pset_filter(dcpl, kMissingFilter, 0, 0, nullptr);
  const std::size_t bytes = k.values.size() * H5Tget_size(fileType(k.stored));
  if (k.storage == Storage::External || k.storage == Storage::ExternalShort)
    H5Pset_external(dcpl, (path + ".raw").c_str(), 0, bytes);
  if (k.storage == Storage::Virtual || k.storage == Storage::VirtualMissing) {
    const std::string source = fs::path(path).filename().string() + ".source";
    if (k.storage == Storage::Virtual) {
      const hid_t s =
          H5Fcreate((path + ".source").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
      const hid_t d =
          H5Dcreate2(s, "/full", fileType(k.stored), space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, k.values.data());
      H5Dclose(d);
      H5Fclose(s);
    }
    H5Pset_virtual(dcpl, space, source.c_str(), "/full", space);
  }
  const hid_t d = H5Dcreate2(f, "/full", fileType(k.stored), space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (k.storage == Storage::PartWritten) {
    const hsize_t start[4] = {0, 0, 0, 0};
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, chunk, nullptr);
    const hid_t mem = H5Screate_simple(4, chunk, nullptr);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, mem, space, H5P_DEFAULT, k.values.data());
    H5Sclose(mem);
  } else if (k.storage != Storage::Unwritten && k.storage != Storage::Virtual &&
             k.storage != Storage::VirtualMissing) {
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, k.values.data());
  }
  if (k.attribute != Attribute::None && !k.attributeOnRoot)
    writeString(d, k.channelsLast != k.attributeContradicts ? "DHWC" : "CDHW", k.attribute);
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(space);
}

void writeTargets(hid_t f, Targets t) {
  if (t == Targets::Missing) return;
  std::vector<double> v{0.25, -1.5, 3, 0.125};
  if (t == Targets::NaN) v[2] = NAN;
  const hsize_t n = t == Targets::Short ? 3 : 4;
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  const hid_t d = H5Dcreate2(f, "/unitPar", t == Targets::Float64 ? H5T_IEEE_F64LE : H5T_IEEE_F32LE,
                             space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Dclose(d);
  H5Sclose(space);
}

// Writes case `k` as `path` (and beside it what its storage needs), then cuts it.
void writeCase(const std::string& path, const Case& k) {
  H5Z_class2_t filter{H5Z_CLASS_T_VERS, kMissingFilter, 1, 1, "lzf", nullptr, nullptr, copyFilter};
  H5Zregister(&filter);
  const Index3& e = k.extents;
  const std::vector<hsize_t> dims =
      k.channelsLast ? std::vector<hsize_t>{hsize_t(e[0]), hsize_t(e[1]), hsize_t(e[2]), C}
                     : std::vector<hsize_t>{C, hsize_t(e[0]), hsize_t(e[1]), hsize_t(e[2])};
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  writeFull(f, path, k, dims);
  writeTargets(f, k.targets);
  if (k.attribute != Attribute::None && k.attributeOnRoot)
    writeString(f, k.channelsLast != k.attributeContradicts ? "DHWC" : "CDHW", k.attribute);
  H5Fclose(f);
  H5Zunregister(kMissingFilter);  // the reader's HDF5 lacks it, as it lacks h5py's LZF
  if (k.storage == Storage::ExternalShort)
    fs::resize_file(path + ".raw", fs::file_size(path + ".raw") / 2);
  if (k.cut < 1) fs::resize_file(path, std::uintmax_t(double(fs::file_size(path)) * k.cut));
}

// What the reader must give for case `k`: "L" or "F" (channels last or first), "i" or "f"
// (int16 or float32), then the input's bytes in the file's order and the targets as float32;
// nothing when the file breaks a rule (a cut file may be refused or read: cut says nothing).
Expected expected(const Case& k) {
  const bool bad = k.stored == Stored::Float64 || k.stored == Stored::Int32 ||
                   k.storage == Storage::MissingFilter || k.storage == Storage::Unwritten ||
                   k.storage == Storage::PartWritten || k.storage == Storage::ExternalShort ||
                   k.storage == Storage::VirtualMissing ||
                   (k.attribute != Attribute::None && k.attributeContradicts) ||
                   k.targets == Targets::Missing || k.targets == Targets::Short ||
                   k.targets == Targets::NaN;
  if (bad) return std::nullopt;
  std::string text =
      std::string(k.channelsLast ? "L" : "F") + (k.stored == Stored::Int16 ? "i" : "f");
  for (double v : k.values) {
    if (k.stored == Stored::Int16) {
      const auto s = std::int16_t(v);
      text += test::bytesOf(&s, 1);
    } else {
      const auto s = float(v);
      text += test::bytesOf(&s, 1);
    }
  }
  const float targets[4] = {0.25f, -1.5f, 3, 0.125f};
  return text + test::bytesOf(targets, 4);
}

Case randomCase(std::mt19937& rng) {
  auto pick = [&](int n) { return int(rng() % unsigned(n)); };
  Case k;
  k.extents = {3 + pick(3), 3 + pick(3), 3 + pick(3)};
  k.channelsLast = pick(2) == 1;
  k.stored = pick(3) == 0 ? Stored(pick(int(Stored::Count))) : Stored(pick(2));
  k.storage = Storage(pick(int(Storage::Count)));
  k.attribute = Attribute(pick(int(Attribute::Count)));
  k.attributeOnRoot = pick(2) == 1;
  k.attributeContradicts = pick(6) == 0;
  k.targets = pick(3) == 0 ? Targets(pick(int(Targets::Count))) : Targets::Float32;
  k.cut = pick(6) == 0 ? double(pick(100)) / 100 : 1;
  k.values.resize(std::size_t(C * k.extents[0] * k.extents[1] * k.extents[2]));
  for (double& v : k.values) v = double(pick(2001) - 1000);
  return k;
}

std::string describe(const Case& k) {
  return "storage " + std::to_string(int(k.storage)) + ", stored " + std::to_string(int(k.stored)) +
         ", attribute " + std::to_string(int(k.attribute)) + (k.attributeOnRoot ? " on root" : "") +
         (k.attributeContradicts ? " contradicting" : "") + ", targets " +
         std::to_string(int(k.targets)) + (k.channelsLast ? ", channels last" : "") + ", cut " +
         std::to_string(k.cut);
}

// The sample read as training reads it on one rank: the whole volume, no ghosts.
std::string readSample(const std::string& path, const Index3& extents) {
  const data::SampleSpec spec = data::SampleSpec::cosmology(C, extents);
  const data::Subvolume sub(BlockDecomposition(extents, {1, 1, 1}), {0, 0, 0}, GhostWidths{});
  data::SampleReader reader(MPI_COMM_SELF, spec, sub, data::ReadMode::Independent);
  std::string input(reader.inputCapacityBytes(), '\0');
  float targets[4] = {};
  const data::SampleFormat format = reader.read(path, input.data(), nullptr, targets);
  input.resize(std::size_t(C * sub.read.size()) * format.elementSize());
  return std::string(format.channelsLast ? "L" : "F") +
         (format.type == data::StoredType::Int16 ? "i" : "f") + input + test::bytesOf(targets, 4);
}

TEST(ReaderFuzz, Hdf5SampleRefusedOrReadExactly) {
  test::ScratchDir dir(MPI_COMM_SELF);
  std::mt19937 rng(41);
  int read = 0, refused = 0;
  const int cases = 300;
  for (int c = 0; c < cases; ++c) {
    const Case k = randomCase(rng);
    const std::string path = dir / ("case" + std::to_string(c) + ".h5");
    writeCase(path, k);
    const test::Outcome o = test::runIsolated([&] { return readSample(path, k.extents); }, 20);
    EXPECT_EQ(test::verdict(o, expected(k)), "") << "case " << c << ": " << describe(k);
    const bool valid = expected(k) && k.cut == 1;
    if (valid) {
      EXPECT_EQ(o.kind, test::Outcome::Read)
          << "case " << c << ": " << describe(k) << ": " << o.text;
    }
    (o.kind == test::Outcome::Read ? read : refused) += 1;
  }
  std::printf("HDF5 fuzz: %d cases, %d read, %d refused\n", cases, read, refused);
  EXPECT_GT(read, cases / 10);
  EXPECT_GT(refused, cases / 10);
}

}  // namespace
