// `hybrid3d import nifti`: NIfTI files written here with the NIfTI library (NIfTI-1 and -2,
// .nii and .nii.gz, int16 and float32 images with and without scaling, uint8 labels, a 4D
// two-channel image) are imported, and every voxel of every output is checked against a plain
// loop over the source values (normalisation, crop and pad placement, labels), with the spacing
// and shape attributes and the manifest; the files do not depend on the rank count; a bad pair
// stops every rank naming the file and leaves no sample behind.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>

#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/generate/NiftiImport.hpp>

#include "ErrorOf.hpp"
#include "GenerateTestUtils.hpp"
#include "NiftiTestFile.hpp"
#include "WorldRank.hpp"

namespace {

using namespace hybrid3d;
using namespace hybrid3d::generate;
using test::errorOf;
namespace fs = std::filesystem;

constexpr Index S = 16;

// One source pair: the image's spec and stored values, the labels' values.
struct Pair {
  std::string name;
  test::NiftiSpec image;
  std::vector<double> stored;  // [t][k][j][i]
  std::vector<double> labels;  // [k][j][i]
  int labelVersion = 1;
};

Pair makePair(const std::string& name, std::array<std::int64_t, 4> xyzt, int datatype, int version,
              double slope, double inter, unsigned seed) {
  Pair p;
  p.name = name;
  p.image.xyzt = xyzt;
  p.image.datatype = datatype;
  p.image.version = version;
  p.image.pixdim = {0.5 + 0.25 * seed, 0.75, 1.25 + seed};
  p.image.slope = slope;
  p.image.inter = inter;
  const std::size_t voxels = std::size_t(xyzt[0] * xyzt[1] * xyzt[2]);
  p.stored.resize(voxels * std::size_t(xyzt[3]));
  for (std::size_t v = 0; v < p.stored.size(); ++v)
    p.stored[v] = double((v * (7 + seed) + seed * 13) % 251) - 90;  // whole: exact in int16
  p.labels.resize(voxels);
  for (std::size_t v = 0; v < voxels; ++v) p.labels[v] = double((v / 5 + seed) % 3);
  p.labelVersion = 3 - version;
  return p;
}

// The source pairs of the one-channel dataset: crops and pads, odd and even, on every axis.
std::vector<Pair> oneChannelPairs() {
  return {makePair("case_001.nii.gz", {21, 11, 16, 1}, NIFTI_TYPE_INT16, 1, 2.0, -5.0, 1),
          makePair("case_002.nii", {9, 18, 17, 1}, NIFTI_TYPE_FLOAT32, 2, 0.0, 0.0, 2),
          makePair("case_003.nii", {16, 23, 8, 1}, NIFTI_TYPE_INT16, 1, 0.0, 0.0, 3),
          makePair("case_004.nii.gz", {12, 16, 20, 1}, NIFTI_TYPE_FLOAT32, 2, 0.5, 3.0, 4)};
}

// Writes images/ and labels/ under `dir` on world rank 0; every rank returns after.
void writePairs(const std::string& dir, const std::vector<Pair>& pairs) {
  if (test::worldRank() == 0) {
    fs::create_directories(dir + "/images");
    fs::create_directories(dir + "/labels");
    for (const Pair& p : pairs) {
      test::writeNiftiFile(dir + "/images/" + p.name, p.image, p.stored);
      test::NiftiSpec l = p.image;
      l.xyzt[3] = 1;
      l.datatype = NIFTI_TYPE_UINT8;
      l.version = p.labelVersion;
      l.slope = 0;
      test::writeNiftiFile(dir + "/labels/" + p.name, l, p.labels);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

NiftiImportOptions options(const std::string& dir, const std::string& out) {
  NiftiImportOptions o;
  o.imagesDir = dir + "/images";
  o.labelsDir = dir + "/labels";
  o.outDir = out;
  o.size = S;
  o.classes = 3;
  return o;
}

std::vector<double> arrayAttribute(const std::string& path, const char* name) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t a = H5Aopen(f, name, H5P_DEFAULT);
  const hid_t space = H5Aget_space(a);
  std::vector<double> v(std::size_t(H5Sget_simple_extent_npoints(space)));
  H5Aread(a, H5T_NATIVE_DOUBLE, v.data());
  H5Sclose(space);
  H5Aclose(a);
  H5Fclose(f);
  return v;
}

// Where output voxel 0 lies in a source axis of n voxels, written out plainly: the middle S of
// a longer axis, the source in the middle of a shorter one.
Index sourceOfFirst(Index n) { return n >= S ? (n - S) / 2 : -((S - n) / 2); }

void expectImported(const std::string& out, const Pair& p) {
  const std::string file = out + "/" + niftiSampleName(p.name);
  const data::File f(file);
  const Index X = p.image.xyzt[0], Y = p.image.xyzt[1], Z = p.image.xyzt[2], C = p.image.xyzt[3];
  ASSERT_EQ(f.shape("/volume"), (std::vector<Index>{C, S, S, S})) << file;
  ASSERT_EQ(f.shape("/segmentation"), (std::vector<Index>{S, S, S})) << file;
  const std::vector<float> volume = f.read<float>("/volume");
  const std::vector<int> labels = f.read<int>("/segmentation");
  const double slope = p.image.slope != 0 ? p.image.slope : 1,
               inter = p.image.slope != 0 ? p.image.inter : 0;
  const Index oz = sourceOfFirst(Z), oy = sourceOfFirst(Y), ox = sourceOfFirst(X);
  for (Index c = 0; c < C; ++c) {
    double sum = 0, squares = 0;
    const Index n = X * Y * Z;
    for (Index v = 0; v < n; ++v) sum += slope * p.stored[std::size_t(c * n + v)] + inter;
    const double mean = sum / double(n);
    for (Index v = 0; v < n; ++v) {
      const double x = slope * p.stored[std::size_t(c * n + v)] + inter - mean;
      squares += x * x;
    }
    const double std = std::sqrt(squares / double(n));
    for (Index d = 0; d < S; ++d)
      for (Index h = 0; h < S; ++h)
        for (Index w = 0; w < S; ++w) {
          const Index k = d + oz, j = h + oy, i = w + ox;
          const bool inside = k >= 0 && k < Z && j >= 0 && j < Y && i >= 0 && i < X;
          const std::size_t at = std::size_t(((c * S + d) * S + h) * S + w);
          const double want =
              inside ? (slope * p.stored[std::size_t(c * n + (k * Y + j) * X + i)] + inter - mean) /
                           std
                     : 0.0;
          ASSERT_NEAR(volume[at], want, 1e-5 * (1 + std::abs(want)))
              << file << " channel " << c << " voxel " << d << "," << h << "," << w;
          if (c == 0) {
            const int label = inside ? int(p.labels[std::size_t((k * Y + j) * X + i)]) : 0;
            ASSERT_EQ(labels[std::size_t((d * S + h) * S + w)], label)
                << file << " voxel " << d << "," << h << "," << w;
          }
        }
  }
  EXPECT_EQ(arrayAttribute(file, "spacing"),
            (std::vector<double>{p.image.pixdim[2], p.image.pixdim[1], p.image.pixdim[0]}));
  EXPECT_EQ(f.attributeString("spacing_units"), "mm");
  EXPECT_EQ(arrayAttribute(file, "source_shape"),
            (std::vector<double>{double(Z), double(Y), double(X)}));
  EXPECT_EQ(arrayAttribute(file, "source_offset"),
            (std::vector<double>{double(oz), double(oy), double(ox)}));
  EXPECT_EQ(f.attributeNumber("nifti_version"), double(p.image.version));
  EXPECT_EQ(f.attributeString("source_image"), p.name);
}

TEST(NiftiImport, EveryVoxelMatchesAPlainLoopOverTheSource) {
  test::ScratchDir dir;
  const std::vector<Pair> pairs = oneChannelPairs();
  writePairs(dir.path(), pairs);
  const Manifest m = importNifti(MPI_COMM_WORLD, options(dir.path(), dir / "out"));
  ASSERT_EQ(m.samples.size(), pairs.size());
  if (test::worldRank() != 0) return;
  const Manifest back = readManifest(dir / "out/manifest.txt");
  EXPECT_EQ(back.generator, "nifti");
  EXPECT_EQ(back.size, S);
  ASSERT_EQ(back.samples.size(), pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    EXPECT_EQ(back.samples[i].file, niftiSampleName(pairs[i].name));
    expectImported(dir / "out", pairs[i]);
  }
}

TEST(NiftiImport, FourDimensionalImagesGiveOneChannelPerVolume) {
  test::ScratchDir dir;
  // As BRATS's [240,240,155,4], small: 4 modalities along t, each normalised on its own.
  const std::vector<Pair> pairs = {
      makePair("brain_001.nii.gz", {13, 19, 10, 4}, NIFTI_TYPE_FLOAT32, 1, 0.0, 0.0, 5),
      makePair("brain_002.nii", {17, 14, 16, 4}, NIFTI_TYPE_INT16, 2, 1.5, 1.0, 6)};
  writePairs(dir.path(), pairs);
  importNifti(MPI_COMM_WORLD, options(dir.path(), dir / "out"));
  if (test::worldRank() != 0) return;
  for (const Pair& p : pairs) expectImported(dir / "out", p);
}

TEST(NiftiImport, SameFilesOnOneRankAndOnAllRanks) {
  test::ScratchDir dir;
  const std::vector<Pair> pairs = oneChannelPairs();
  writePairs(dir.path(), pairs);
  importNifti(MPI_COMM_WORLD, options(dir.path(), dir / "all"));
  {
    test::FirstRanks one(1);
    if (one.inside()) importNifti(one.comm(), options(dir.path(), dir / "one"));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (test::worldRank() != 0) return;
  for (const Pair& p : pairs) {
    const std::string name = niftiSampleName(p.name);
    EXPECT_EQ(test::readWhole<float>(dir / ("all/" + name), "/volume"),
              test::readWhole<float>(dir / ("one/" + name), "/volume"))
        << name;
    EXPECT_EQ(test::readWhole<int>(dir / ("all/" + name), "/segmentation"),
              test::readWhole<int>(dir / ("one/" + name), "/segmentation"))
        << name;
    for (const char* a : {"spacing", "source_offset", "channel_mean", "channel_std"})
      EXPECT_EQ(arrayAttribute(dir / ("all/" + name), a), arrayAttribute(dir / ("one/" + name), a))
          << name << " " << a;
  }
}

// No sample file and no manifest: nothing a training run would take for a dataset.
void expectNothingLeft(const std::string& out) {
  MPI_Barrier(MPI_COMM_WORLD);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(out, ec))
    ADD_FAILURE() << out << " holds " << e.path().filename() << " after a failed import";
}

TEST(NiftiImport, ABadPairStopsEveryRankNamingTheFileAndLeavesNoSample) {
  test::ScratchDir dir;
  std::vector<Pair> pairs = oneChannelPairs();
  pairs.back().labels[100] = 7;  // the last pair: the others are converted before it fails
  writePairs(dir.path(), pairs);
  const std::string labelTooLarge =
      errorOf([&] { importNifti(MPI_COMM_WORLD, options(dir.path(), dir / "range")); });
  EXPECT_NE(labelTooLarge.find("labels/case_004.nii.gz: holds label 7 at voxel (i,j,k) = (4,8,0)"),
            std::string::npos)
      << labelTooLarge;
  expectNothingLeft(dir / "range");

  NiftiImportOptions more = options(dir.path(), dir / "more");
  more.classes = 8;  // now 7 is a class: the same pairs import
  EXPECT_EQ(errorOf([&] { importNifti(MPI_COMM_WORLD, more); }), "");

  if (test::worldRank() == 0) fs::remove(dir / "labels/case_002.nii");
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string missing =
      errorOf([&] { importNifti(MPI_COMM_WORLD, options(dir.path(), dir / "missing")); });
  EXPECT_NE(missing.find("images/case_002.nii: no label file of the same name"), std::string::npos)
      << missing;
  expectNothingLeft(dir / "missing");

  // A label file of another shape; then a truncated .nii.gz image.
  if (test::worldRank() == 0) {
    test::NiftiSpec l;
    l.xyzt = {9, 18, 16, 1};
    l.datatype = NIFTI_TYPE_UINT8;
    test::writeNiftiFile(dir / "labels/case_002.nii", l, {});
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string shape =
      errorOf([&] { importNifti(MPI_COMM_WORLD, options(dir.path(), dir / "shape")); });
  EXPECT_NE(shape.find("labels/case_002.nii: 9x18x16 voxels (x,y,z), but its image"),
            std::string::npos)
      << shape;
  expectNothingLeft(dir / "shape");

  if (test::worldRank() == 0) {
    fs::resize_file(dir / "images/case_001.nii.gz",
                    fs::file_size(dir / "images/case_001.nii.gz") / 2);
    fs::remove(dir / "labels/case_002.nii");
    fs::remove(dir / "images/case_002.nii");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string truncated =
      errorOf([&] { importNifti(MPI_COMM_WORLD, options(dir.path(), dir / "truncated")); });
  EXPECT_NE(truncated.find("images/case_001.nii.gz: "), std::string::npos) << truncated;
  EXPECT_NE(truncated.find("truncated"), std::string::npos) << truncated;
  expectNothingLeft(dir / "truncated");
}

TEST(NiftiImport, ImagesOfOneDatasetNeedTheSameChannels) {
  test::ScratchDir dir;
  writePairs(dir.path(), {makePair("a.nii", {8, 8, 8, 1}, NIFTI_TYPE_INT16, 1, 0, 0, 1),
                          makePair("b.nii", {8, 8, 8, 2}, NIFTI_TYPE_INT16, 1, 0, 0, 2)});
  const std::string e =
      errorOf([&] { importNifti(MPI_COMM_WORLD, options(dir.path(), dir / "out")); });
  EXPECT_NE(e.find("images/b.nii: 2 channel(s), but a.nii has 1"), std::string::npos) << e;
  expectNothingLeft(dir / "out");
}

TEST(NiftiImport, BadOptionsNameTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"dicom"}, "the first word names the format: nifti"},
      {{"nifti", "--labels", "l", "--out", "o"}, "--images: missing"},
      {{"nifti", "--images", "i", "--out", "o"}, "--labels: missing"},
      {{"nifti", "--images", "i", "--labels", "l"}, "--out: missing"},
      {{"nifti", "--images", "i", "--labels", "l", "--out", "o", "--size", "12"},
       "--size: 12 is not a multiple of 8"},
      {{"nifti", "--images", "i", "--labels", "l", "--out", "o", "--classes", "0"},
       "--classes: '0' is not a whole number in [1, 256]"},
      {{"nifti", "--images", "i", "--labels", "l", "--out", "o", "--factor", "2"},
       "unknown argument '--factor'"},
  };
  // Not a structured binding: a lambda capturing one is C++20 (clang 14 rejects it).
  for (const auto& c : cases) {
    const std::vector<std::string>& args = c.first;
    const std::string& want = c.second;
    EXPECT_NE(errorOf([&] { parseNiftiImportOptions(args); }).find(want), std::string::npos)
        << want;
  }
  const NiftiImportOptions o =
      parseNiftiImportOptions({"nifti", "--images", "i", "--labels", "l", "--out", "o"});
  EXPECT_EQ(o.size, 128);
  EXPECT_EQ(o.classes, 3);
}

}  // namespace
