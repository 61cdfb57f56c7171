// The NIfTI reader (readNiftiVolume) against random header fields, byte flips, truncations and
// gzip member splits of valid files written by the NIfTI library: every case must end in one
// line refusing the file, or in exactly the voxels that the file's bytes hold by the NIfTI
// standard, decoded here independently (NiftiReference below), never in a signal or a hang.
#include <cmath>
#include <cstddef>
#include <cstring>
#include <cstdio>
#include <optional>
#include <random>
#include <type_traits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/generate/NiftiVolume.hpp>

#include "FuzzCase.hpp"
#include "GenerateTestUtils.hpp"
#include "NiftiTestFile.hpp"

namespace {

using namespace hybrid3d;
using test::Expected;

// A field of the unpacked bytes, read in the host's byte order (the files are written so).
template <class T>
T field(const std::string& bytes, std::size_t offset) {
  T v{};
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

// One stored voxel of datatype `type` at `p` as double (float NaN and Inf as 0, as the NIfTI
// library reads them: NiftiVolume.hpp); its size, 0 for a type that is not one real number.
int realTypeSize(int type) {
  switch (type) {
    case NIFTI_TYPE_INT8:
    case NIFTI_TYPE_UINT8:
      return 1;
    case NIFTI_TYPE_INT16:
    case NIFTI_TYPE_UINT16:
      return 2;
    case NIFTI_TYPE_INT32:
    case NIFTI_TYPE_UINT32:
    case NIFTI_TYPE_FLOAT32:
      return 4;
    case NIFTI_TYPE_INT64:
    case NIFTI_TYPE_UINT64:
    case NIFTI_TYPE_FLOAT64:
      return 8;
    default:
      return 0;
  }
}

double storedValue(int type, const char* p) {
  auto as = [&](auto t) {
    std::memcpy(&t, p, sizeof t);
    return t;
  };
  switch (type) {
    case NIFTI_TYPE_INT8:
      return as(std::int8_t());
    case NIFTI_TYPE_UINT8:
      return as(std::uint8_t());
    case NIFTI_TYPE_INT16:
      return as(std::int16_t());
    case NIFTI_TYPE_UINT16:
      return as(std::uint16_t());
    case NIFTI_TYPE_INT32:
      return as(std::int32_t());
    case NIFTI_TYPE_UINT32:
      return as(std::uint32_t());
    case NIFTI_TYPE_INT64:
      return double(as(std::int64_t()));
    case NIFTI_TYPE_UINT64:
      return double(as(std::uint64_t()));
    case NIFTI_TYPE_FLOAT32: {
      const float f = as(float());
      return std::isfinite(f) ? f : 0.0;
    }
    default: {
      const double d = as(double());
      return std::isfinite(d) ? d : 0.0;
    }
  }
}

// The fields the reference needs, from either header version.
struct Header {
  std::int64_t dim[8] = {};
  int datatype = 0, bitpix = 0;
  double voxOffset = 0, slope = 0, inter = 0;
  std::size_t minOffset = 0;  // the header and its 4-byte extension flag
};

template <class H>
std::optional<Header> headerOf(const std::string& bytes, const char* magic, std::size_t magicSize) {
  if (bytes.size() < sizeof(H) ||
      std::memcmp(bytes.data() + offsetof(H, magic), magic, magicSize) != 0)
    return std::nullopt;
  Header h;
  using Dim = std::remove_reference_t<decltype(H{}.dim[0])>;
  for (int d = 0; d < 8; ++d) h.dim[d] = field<Dim>(bytes, offsetof(H, dim) + d * sizeof(Dim));
  h.datatype = field<decltype(H{}.datatype)>(bytes, offsetof(H, datatype));
  h.bitpix = field<decltype(H{}.bitpix)>(bytes, offsetof(H, bitpix));
  h.voxOffset = double(field<decltype(H{}.vox_offset)>(bytes, offsetof(H, vox_offset)));
  h.slope = double(field<decltype(H{}.scl_slope)>(bytes, offsetof(H, scl_slope)));
  h.inter = double(field<decltype(H{}.scl_inter)>(bytes, offsetof(H, scl_inter)));
  h.minOffset = sizeof(H) + 4;
  return h;
}

// The volume a NIfTI file's unpacked bytes hold by the standard, as the reader reports it:
// "C,D,H,W|" and the scaled values as doubles; nothing when the bytes break a rule.
Expected niftiReference(const std::string& bytes) {
  if (bytes.size() < 4) return std::nullopt;
  const auto size = field<std::int32_t>(bytes, 0);
  std::optional<Header> h = size == 348   ? headerOf<nifti_1_header>(bytes, "n+1", 4)
                            : size == 540 ? headerOf<nifti_2_header>(bytes, "n+2\0\r\n\032\n", 8)
                                          : std::nullopt;
  if (!h || h->dim[0] < 3 || h->dim[0] > 7) return std::nullopt;
  std::int64_t n = 1;
  for (int d = 1; d <= h->dim[0]; ++d) {
    if (h->dim[d] < 1 || (d > 4 && h->dim[d] != 1) || h->dim[d] > (std::int64_t(1) << 40) / n)
      return std::nullopt;
    n *= h->dim[d];
  }
  const int bytesPer = realTypeSize(h->datatype);
  if (bytesPer == 0 || h->bitpix != 8 * bytesPer) return std::nullopt;
  if (!std::isfinite(h->voxOffset) || h->voxOffset != std::floor(h->voxOffset) ||
      h->voxOffset < double(h->minOffset) ||
      h->voxOffset + double(n * bytesPer) > double(bytes.size()))
    return std::nullopt;
  const bool scaled = h->slope != 0 && std::isfinite(h->slope);
  const double inter = scaled && std::isfinite(h->inter) ? h->inter : 0.0;
  std::vector<double> values(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const double v =
        storedValue(h->datatype, bytes.data() + std::size_t(h->voxOffset) + i * bytesPer);
    values[std::size_t(i)] = scaled ? h->slope * v + inter : v;
  }
  const std::int64_t C = h->dim[0] >= 4 ? h->dim[4] : 1;
  return std::to_string(C) + "," + std::to_string(h->dim[3]) + "," + std::to_string(h->dim[2]) +
         "," + std::to_string(h->dim[1]) + "|" + test::bytesOf(values.data(), values.size());
}

// The unpacked bytes of `path` as far as zlib can read them (a cut .nii.gz gives its start).
std::string readableBytes(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string bytes;
  char buffer[1 << 16];
  int n = 0;
  while (f && (n = gzread(f, buffer, sizeof buffer)) > 0) bytes.append(buffer, std::size_t(n));
  if (f) gzclose(f);
  return bytes;
}

const std::vector<int> kTypes{NIFTI_TYPE_INT8,   NIFTI_TYPE_UINT8,   NIFTI_TYPE_INT16,
                              NIFTI_TYPE_UINT16, NIFTI_TYPE_INT32,   NIFTI_TYPE_UINT32,
                              NIFTI_TYPE_INT64,  NIFTI_TYPE_FLOAT32, NIFTI_TYPE_FLOAT64};
const std::vector<std::string> kFields{"dim0",       "dim1",      "dim2",     "dim3",
                                       "dim4",       "dim5",      "datatype", "bitpix",
                                       "vox_offset", "scl_slope", "scl_inter"};
const std::vector<double> kValues{
    0,      1,     -1,           2,      3,   4,        5,   8,    16,  64,   100,
    255,    256,   347,          348,    352, 368,      540, 544,  560, 1024, 32767,
    -32768, 65536, 4294967296.0, 4.6e18, NAN, INFINITY, 0.5, -7.25};

struct Case {
  std::string what;   // what was done, for the report
  bool valid = true;  // nothing but a split into gzip members: the file must be read
};

// One random case: a valid file written by the library at `path`, then damaged by `rng`.
Case makeCase(const std::string& path, std::mt19937& rng) {
  auto pick = [&](int n) { return int(rng() % unsigned(n)); };
  test::NiftiSpec spec;
  spec.xyzt = {1 + pick(5), 1 + pick(5), 1 + pick(4), pick(3) == 0 ? 2 : 1};
  spec.datatype = kTypes[std::size_t(pick(int(kTypes.size())))];
  spec.version = 1 + pick(2);
  if (pick(3) == 0) {
    spec.slope = std::vector<double>{0.5, 2, -3}[std::size_t(pick(3))];
    spec.inter = std::vector<double>{0, -5, 3.5}[std::size_t(pick(3))];
  }
  std::vector<double> stored(
      std::size_t(spec.xyzt[0] * spec.xyzt[1] * spec.xyzt[2] * spec.xyzt[3]));
  for (double& v : stored) v = double(pick(120));
  test::writeNiftiFile(path, spec, stored);
  std::string bytes = test::niftiFileBytes(path), what;
  int members = 1, empty = 0;
  bool valid = true;
  for (int m = pick(3); m > 0; --m) {
    const int kind = pick(5);
    valid = valid && kind == 4;
    switch (kind) {
      case 0:
      case 1: {
        const std::string f = kFields[std::size_t(pick(int(kFields.size())))];
        const double v = kValues[std::size_t(pick(int(kValues.size())))];
        if (bytes.size() >= (spec.version == 2 ? sizeof(nifti_2_header) : sizeof(nifti_1_header)))
          test::setNiftiHeaderField(bytes, spec.version, f, v);
        what += " " + f + "=" + std::to_string(v);
        break;
      }
      case 2: {
        const std::size_t at = std::size_t(pick(spec.version == 2 ? 540 : 348));
        if (at < bytes.size()) bytes[at] = char(rng());
        what += " byte " + std::to_string(at) + " changed";
        break;
      }
      case 3:
        bytes.resize(std::size_t(pick(int(bytes.size()))));
        what += " cut at " + std::to_string(bytes.size());
        break;
      default:
        members = 1 + pick(3);
        empty = pick(2);
        what += " " + std::to_string(members) + "+" + std::to_string(empty) + " gzip members";
    }
  }
  test::writeNiftiBytes(path, bytes, members, empty);
  return {"NIfTI-" + std::to_string(spec.version) + " " + nifti_datatype_string(spec.datatype) +
              (what.empty() ? " as written" : what),
          valid};
}

TEST(ReaderFuzz, NiftiRefusesOrReadsExactlyTheVoxels) {
  test::ScratchDir dir(MPI_COMM_SELF);
  std::mt19937 rng(41);
  int read = 0, refused = 0;
  const int cases = 500;
  for (int c = 0; c < cases; ++c) {
    const std::string path = dir / ("case" + std::to_string(c) + (rng() % 2 ? ".nii.gz" : ".nii"));
    const Case made = makeCase(path, rng);
    const std::string& what = made.what;
    const Expected expected = niftiReference(readableBytes(path));
    const test::Outcome o = test::runIsolated(
        [&] {
          const generate::NiftiVolume v = generate::readNiftiVolume(path);
          return std::to_string(v.channels) + "," + std::to_string(v.extent[0]) + "," +
                 std::to_string(v.extent[1]) + "," + std::to_string(v.extent[2]) + "|" +
                 test::bytesOf(v.values.data(), v.values.size());
        },
        20);
    EXPECT_EQ(test::verdict(o, expected), "") << "case " << c << ": " << what;
    (o.kind == test::Outcome::Read ? read : refused) += 1;
    if (made.valid) {
      EXPECT_EQ(o.kind, test::Outcome::Read) << "case " << c << ": " << what << ": " << o.text;
    }
  }
  std::printf("NIfTI fuzz: %d cases, %d read, %d refused\n", cases, read, refused);
  EXPECT_GT(read, cases / 10);
  EXPECT_GT(refused, cases / 10);
}

}  // namespace
