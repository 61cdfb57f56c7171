// `hybrid3d downsample`: every output voxel is the mean of its block of input voxels (checked
// against a plain loop over the file), the targets, attributes and manifest carry over, the
// result does not depend on the rank count, and bad requests fail on every rank with one line
// naming the flag or directory.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mpi.h>

#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/generate/Downsample.hpp>
#include <hybrid3d/generate/GenerateDataset.hpp>

#include "ErrorOf.hpp"
#include "GenerateTestUtils.hpp"
#include "PublishedDataset.hpp"
#include "WorldRank.hpp"

namespace {

using namespace hybrid3d;
using namespace hybrid3d::generate;
using test::errorOf;

// A small cosmology dataset (S = 16: 3 train + 2 validation samples) written by every rank.
void writeDataset(const std::string& dir, Index size = 16) {
  GenerateOptions o;
  o.generator = "cosmology";
  o.outDir = dir;
  o.size = size;
  o.train = 3;
  o.validation = 2;
  o.seed = 11;
  o.meanCount = 20;
  generateDataset(MPI_COMM_WORLD, o);
}

TEST(Downsample, EveryVoxelIsTheMeanOfItsBlock) {
  test::ScratchDir dir;
  writeDataset(dir / "s16");
  for (Index factor : {2, 4}) {
    const std::string out = dir / ("s" + std::to_string(16 / factor));
    const Manifest m = downsampleDataset(MPI_COMM_WORLD, {dir / "s16", out, factor});
    EXPECT_EQ(m.size, 16 / factor);
    ASSERT_EQ(m.samples.size(), 5u);
    if (test::worldRank() != 0) continue;
    const Manifest back = readManifest(out + "/manifest.txt");
    EXPECT_EQ(back.size, 16 / factor);
    ASSERT_EQ(back.samples.size(), 5u);
    for (const ManifestSample& s : back.samples) {
      const data::File fine(dir / ("s16/" + s.file)), coarse(out + "/" + s.file);
      const std::vector<float> x = fine.read<float>("/full"), y = coarse.read<float>("/full");
      const Index S = 16, c = S / factor;
      ASSERT_EQ(coarse.shape("/full"), (std::vector<Index>{4, c, c, c}));
      for (Index ch = 0; ch < 4; ++ch)
        for (Index d = 0; d < c; ++d)
          for (Index h = 0; h < c; ++h)
            for (Index w = 0; w < c; ++w) {
              double sum = 0;
              for (Index i = 0; i < factor; ++i)
                for (Index j = 0; j < factor; ++j)
                  for (Index k = 0; k < factor; ++k)
                    sum += x[((ch * S + d * factor + i) * S + h * factor + j) * S + w * factor + k];
              const double want = sum / double(factor * factor * factor);
              ASSERT_NEAR(y[((ch * c + d) * c + h) * c + w], want, 1e-6 * want + 1e-6)
                  << s.file << " channel " << ch << " voxel " << d << "," << h << "," << w;
            }
      EXPECT_EQ(coarse.read<float>("/unitPar"), fine.read<float>("/unitPar")) << s.file;
      EXPECT_EQ(coarse.attributeNumber("sample"), fine.attributeNumber("sample"));
      EXPECT_EQ(coarse.attributeString("seed"), fine.attributeString("seed"));
      EXPECT_EQ(coarse.attributeNumber("cutoff"), fine.attributeNumber("cutoff"));
      EXPECT_EQ(coarse.attributeNumber("downsample_factor"), double(factor));
      EXPECT_EQ(coarse.attributeNumber("source_size"), 16.0);
    }
  }
}

TEST(Downsample, SameFilesOnOneRankAndOnAllRanks) {
  test::ScratchDir dir;
  writeDataset(dir / "s16");
  downsampleDataset(MPI_COMM_WORLD, {dir / "s16", dir / "all", 2});
  {
    test::FirstRanks one(1);
    if (one.inside()) downsampleDataset(one.comm(), {dir / "s16", dir / "one", 2});
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (test::worldRank() != 0) return;
  for (const ManifestSample& s : readManifest(dir / "all/manifest.txt").samples)
    EXPECT_EQ(test::readWhole<float>(dir / ("all/" + s.file), "/full"),
              test::readWhole<float>(dir / ("one/" + s.file), "/full"))
        << s.file;
}

// Issue 38: the published forms, without a manifest (int16, channels last), give the dataset
// the generated one gives: the same files as float32 [C, S, S, S], value for value, and the same
// targets; the manifest records the source.
TEST(Downsample, PublishedFilesWithoutManifestGiveTheSameDataset) {
  test::ScratchDir dir;
  writeDataset(dir / "s16");
  downsampleDataset(MPI_COMM_WORLD, {dir / "s16", dir / "own", 2});
  for (const test::PublishedForm form : {test::PublishedForm::Hdf5, test::PublishedForm::Numpy}) {
    const std::string tag = form == test::PublishedForm::Hdf5 ? "hdf5" : "npy";
    test::writePublished(dir / "s16", dir / ("pub_" + tag), form);
    downsampleDataset(MPI_COMM_WORLD, {dir / ("pub_" + tag), dir / ("coarse_" + tag), 2});
    if (test::worldRank() != 0) continue;
    const Manifest own = readManifest(dir / "own/manifest.txt");
    const Manifest coarse = readManifest(dir / ("coarse_" + tag + "/manifest.txt"));
    EXPECT_EQ(coarse.source, dir / ("pub_" + tag));
    EXPECT_EQ(coarse.size, own.size);
    ASSERT_EQ(coarse.samples.size(), own.samples.size());
    for (std::size_t i = 0; i < own.samples.size(); ++i) {
      const std::string& file = own.samples[i].file;
      ASSERT_EQ(coarse.samples[i].file, file) << tag;
      const data::File a(dir / ("own/" + file)), b(dir / ("coarse_" + tag + "/" + file));
      EXPECT_EQ(b.shape("/full"), a.shape("/full")) << file;
      EXPECT_EQ(b.read<float>("/full"), a.read<float>("/full")) << tag << " " << file;
      EXPECT_EQ(b.read<float>("/unitPar"), a.read<float>("/unitPar")) << tag << " " << file;
      EXPECT_FALSE(b.hasAttribute("layout")) << file;
    }
  }
}

TEST(Downsample, BadRequestsFailOnEveryRankNamingTheCulprit) {
  test::ScratchDir dir;
  writeDataset(dir / "s16");
  auto error = [&](const DownsampleOptions& o) {
    return errorOf([&] { downsampleDataset(MPI_COMM_WORLD, o); });
  };
  EXPECT_NE(error({dir / "s16", dir / "x", 3}).find("--factor: 3 does not divide"),
            std::string::npos);
  EXPECT_NE(error({dir / "none", dir / "x", 2}).find("none is not a directory"), std::string::npos);
  EXPECT_NE(error({dir / "s16", dir / "s16", 2}).find("is the input directory"), std::string::npos);
  GenerateOptions seg;
  seg.generator = "segmentation";
  seg.outDir = dir / "seg";
  seg.size = 16;
  seg.train = 1;
  generateDataset(MPI_COMM_WORLD, seg);
  EXPECT_NE(error({dir / "seg", dir / "x", 2}).find("segmentation dataset"), std::string::npos);

  const std::vector<std::pair<std::vector<std::string>, std::string>> flags{
      {{"--in", "a", "--out", "b"}, "--factor: missing"},
      {{"--in", "a", "--factor", "2"}, "--out: missing"},
      {{"--out", "b", "--factor", "2"}, "--in: missing"},
      {{"--in", "a", "--out", "b", "--factor", "1"}, "--factor: '1'"},
      {{"--in", "a", "--out", "b", "--factor", "two"}, "--factor: 'two'"},
      {{"--in", "a", "--out", "b", "--factor"}, "--factor: missing value"},
      {{"--in", "a", "--out", "b", "--factor", "2", "--size", "4"}, "unknown argument '--size'"},
  };
  // Not a structured binding: a lambda capturing one is C++20 (clang 14 rejects it).
  for (const auto& flag : flags) {
    const std::vector<std::string>& args = flag.first;
    const std::string& want = flag.second;
    EXPECT_NE(errorOf([&] { parseDownsampleOptions(args); }).find(want), std::string::npos) << want;
  }
}

}  // namespace
