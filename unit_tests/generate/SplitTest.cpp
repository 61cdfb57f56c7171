// `hybrid3d split`: every sub-volume holds exactly its box of the source (checked voxel by voxel
// against a plain loop over the files, int16 and float32, channels first and last), targets,
// attributes and manifest carry over, the files do not depend on the rank count, and bad
// requests fail on every rank with one line naming the flag.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <mpi.h>

#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/generate/Downsample.hpp>
#include <hybrid3d/generate/GenerateDataset.hpp>
#include <hybrid3d/generate/SampleWriter.hpp>
#include <hybrid3d/generate/Split.hpp>

#include "ErrorOf.hpp"
#include "GenerateTestUtils.hpp"
#include "PublishedDataset.hpp"
#include "WorldRank.hpp"

namespace {

using namespace hybrid3d;
using namespace hybrid3d::generate;
using test::errorOf;

// A cosmology dataset of int16 counts, 3 train + 2 validation samples of 16^3.
void writeDataset(const std::string& dir) {
  GenerateOptions o;
  o.generator = "cosmology";
  o.outDir = dir;
  o.size = 16;
  o.train = 3;
  o.validation = 2;
  o.seed = 5;
  o.meanCount = 20;
  generateDataset(MPI_COMM_WORLD, o);
}

// The same dataset stored channels-last ([D,H,W,C], root attribute layout = "DHWC"), by rank 0.
void writeChannelsLast(const std::string& from, const std::string& to) {
  if (test::worldRank() == 0) {
    const Manifest m = readManifest(from + "/manifest.txt");
    for (const auto& [split, count] : m.splits)
      std::filesystem::create_directories(to + "/" + split);
    for (const ManifestSample& s : m.samples) {
      const data::File source(from + "/" + s.file);
      const std::vector<std::int16_t> x = source.read<std::int16_t>("/full");
      const Index S = m.size;
      std::vector<std::int16_t> y(x.size());
      for (Index c = 0; c < 4; ++c)
        for (Index v = 0; v < S * S * S; ++v) y[v * 4 + c] = x[c * S * S * S + v];
      SampleWriter file(MPI_COMM_SELF, to + "/" + s.file);
      file.writeSlab("full", {S, S, S, 4}, 0, 0, S, y.data());
      const std::vector<float> u = source.read<float>("/unitPar");
      file.writeWhole("unitPar", {4}, u.data());
      file.attribute("layout", "DHWC");
      file.commit();
    }
    writeManifest(m, to + "/manifest.txt");
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Every piece of every source file against a plain loop over the source's voxels.
template <class T>
void expectEveryPieceIsItsBox(const std::string& in, const std::string& out, Index S,
                              bool channelsLast) {
  const Manifest source = readManifest(in + "/manifest.txt");
  const Manifest split = readManifest(out + "/manifest.txt");
  const Index N = source.size, n = N / S, C = 4;
  ASSERT_EQ(split.size, S);
  ASSERT_EQ(split.samples.size(), source.samples.size() * std::size_t(n * n * n));
  for (std::size_t k = 0; k < split.splits.size(); ++k)
    EXPECT_EQ(split.splits[k].second, source.splits[k].second * n * n * n);
  for (std::size_t i = 0; i < source.samples.size(); ++i) {
    const ManifestSample& s = source.samples[i];
    const data::File fine(in + "/" + s.file);
    const std::vector<T> x = fine.read<T>("/full");
    for (Index p = 0; p < n * n * n; ++p) {
      const ManifestSample& piece = split.samples[i * std::size_t(n * n * n) + std::size_t(p)];
      EXPECT_EQ(piece.file, subvolumeName(s.file, p, n * n * n));
      EXPECT_EQ(piece.unitPar, s.unitPar);
      EXPECT_EQ(piece.parameters, s.parameters);
      const data::File cut(out + "/" + piece.file);
      const Index od = p / (n * n) * S, oh = p / n % n * S, ow = p % n * S;
      EXPECT_EQ(cut.attributeNumber("split_offset_d"), double(od));
      EXPECT_EQ(cut.attributeNumber("split_offset_h"), double(oh));
      EXPECT_EQ(cut.attributeNumber("split_offset_w"), double(ow));
      EXPECT_EQ(cut.attributeNumber("split_piece"), double(p));
      EXPECT_EQ(cut.attributeNumber("source_size"), double(N));
      EXPECT_EQ(cut.attributeString("source_file"), s.file);
      EXPECT_EQ(cut.read<float>("/unitPar"), fine.read<float>("/unitPar"));
      const std::vector<T> y = cut.read<T>("/full");
      ASSERT_EQ(cut.shape("/full"),
                channelsLast ? (std::vector<Index>{S, S, S, C}) : (std::vector<Index>{C, S, S, S}));
      {
        const data::Handle d = cut.openDataset("/full");
        const data::Handle type(H5Dget_type(d), H5Tclose);
        EXPECT_EQ(H5Tget_size(type), sizeof(T)) << piece.file;
      }
      if (channelsLast) {
        EXPECT_EQ(cut.attributeString("layout"), "DHWC");
      }
      for (Index c = 0; c < C; ++c)
        for (Index d = 0; d < S; ++d)
          for (Index h = 0; h < S; ++h)
            for (Index w = 0; w < S; ++w) {
              const Index from = channelsLast ? (((od + d) * N + oh + h) * N + ow + w) * C + c
                                              : ((c * N + od + d) * N + oh + h) * N + ow + w;
              const Index to =
                  channelsLast ? ((d * S + h) * S + w) * C + c : ((c * S + d) * S + h) * S + w;
              ASSERT_EQ(y[std::size_t(to)], x[std::size_t(from)])
                  << piece.file << " channel " << c << " voxel " << d << "," << h << "," << w;
            }
    }
  }
}

TEST(Split, EveryPieceIsItsBoxOfTheSource) {
  test::ScratchDir dir;
  writeDataset(dir / "s16");
  downsampleDataset(MPI_COMM_WORLD, {dir / "s16", dir / "float8", 2});  // float32
  writeChannelsLast(dir / "s16", dir / "last16");
  for (Index S : {8, 4}) {
    const std::string tag = std::to_string(S);
    splitDataset(MPI_COMM_WORLD, {dir / "s16", dir / ("i" + tag), S});
    splitDataset(MPI_COMM_WORLD, {dir / "float8", dir / ("f" + tag), S});
    splitDataset(MPI_COMM_WORLD, {dir / "last16", dir / ("l" + tag), S});
    if (test::worldRank() != 0) continue;
    expectEveryPieceIsItsBox<std::int16_t>(dir / "s16", dir / ("i" + tag), S, false);
    expectEveryPieceIsItsBox<float>(dir / "float8", dir / ("f" + tag), S, false);
    expectEveryPieceIsItsBox<std::int16_t>(dir / "last16", dir / ("l" + tag), S, true);
  }
}

TEST(Split, SameFilesOnOneRankAndOnAllRanks) {
  test::ScratchDir dir;
  writeDataset(dir / "s16");
  splitDataset(MPI_COMM_WORLD, {dir / "s16", dir / "all", 8});
  {
    test::FirstRanks one(1);
    if (one.inside()) splitDataset(one.comm(), {dir / "s16", dir / "one", 8});
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (test::worldRank() != 0) return;
  for (const ManifestSample& s : readManifest(dir / "all/manifest.txt").samples)
    EXPECT_EQ(test::readWhole<std::int16_t>(dir / ("all/" + s.file), "/full"),
              test::readWhole<std::int16_t>(dir / ("one/" + s.file), "/full"))
        << s.file;
  // Nothing left under a temporary name.
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir / "all"))
    EXPECT_NE(e.path().extension(), ".tmp") << e.path();
}

// Issue 38: the published forms, without a manifest, split into the project's own layout
// (NAME_sPPP.h5 under the split's folder, train/ for files at the top, the channels-last order
// marked by the attribute layout = "DHWC", the targets copied) with a manifest that records the
// source. Every piece is checked voxel by voxel against the generated dataset the published one
// was written from (channels first: a plain loop over both orders).
TEST(Split, PublishedFilesWithoutManifestSplitIntoTheProjectsLayout) {
  test::ScratchDir dir;
  writeDataset(dir / "s16");
  const Index N = 16, S = 8, n = N / S, C = 4;
  for (const test::PublishedForm form :
       {test::PublishedForm::Hdf5, test::PublishedForm::Hdf5Flat, test::PublishedForm::Numpy}) {
    const bool flat = form == test::PublishedForm::Hdf5Flat;
    const std::string tag = form == test::PublishedForm::Numpy ? "npy" : flat ? "flat" : "hdf5";
    test::writePublished(dir / "s16", dir / ("pub_" + tag), form);
    splitDataset(MPI_COMM_WORLD, {dir / ("pub_" + tag), dir / ("cut_" + tag), S});
    if (test::worldRank() != 0) continue;
    const Manifest source = readManifest(dir / "s16/manifest.txt");
    const Manifest split = readManifest(dir / ("cut_" + tag + "/manifest.txt"));
    EXPECT_EQ(split.source, dir / ("pub_" + tag));
    EXPECT_EQ(split.size, S);
    using Splits = std::vector<std::pair<std::string, Index>>;
    const Splits splits = flat ? Splits{{"train", 5 * n * n * n}}
                               : Splits{{"train", 3 * n * n * n}, {"validation", 2 * n * n * n}};
    EXPECT_EQ(split.splits, splits);
    ASSERT_EQ(split.samples.size(), source.samples.size() * std::size_t(n * n * n));
    for (std::size_t i = 0; i < source.samples.size(); ++i) {
      const data::File fine(dir / ("s16/" + source.samples[i].file));
      const std::vector<std::int16_t> x = fine.read<std::int16_t>("/full");
      for (Index p = 0; p < n * n * n; ++p) {
        const ManifestSample& piece = split.samples[i * std::size_t(n * n * n) + std::size_t(p)];
        const std::string name = source.samples[i].file;  // train/NAME.h5, validation/NAME.h5
        const std::string own = flat ? "train" + name.substr(name.find('/')) : name;
        ASSERT_EQ(piece.file, subvolumeName(own, p, n * n * n)) << tag;
        const data::File cut(dir / ("cut_" + tag + "/" + piece.file));
        ASSERT_EQ(cut.shape("/full"), (std::vector<Index>{S, S, S, C})) << piece.file;
        EXPECT_EQ(cut.attributeString("layout"), "DHWC");
        EXPECT_EQ(cut.read<float>("/unitPar"), fine.read<float>("/unitPar")) << piece.file;
        const std::vector<std::int16_t> y = cut.read<std::int16_t>("/full");
        const Index od = p / (n * n) * S, oh = p / n % n * S, ow = p % n * S;
        for (Index c = 0; c < C; ++c)
          for (Index d = 0; d < S; ++d)
            for (Index h = 0; h < S; ++h)
              for (Index w = 0; w < S; ++w)
                ASSERT_EQ(y[std::size_t(((d * S + h) * S + w) * C + c)],
                          x[std::size_t(((c * N + od + d) * N + oh + h) * N + ow + w)])
                    << piece.file << " channel " << c << " voxel " << d << "," << h << "," << w;
      }
    }
  }
}

// Issue 41: a split that stops on its third sample leaves no piece under its final name, none
// under a staging or temporary one, and no manifest: nothing a training run would list.
TEST(Split, AStoppedSplitLeavesNoPieceAndNoManifest) {
  test::ScratchDir dir;
  writeDataset(dir / "s16");
  const std::string third = dir / "s16/train/cosmo_000002.h5";
  if (test::worldRank() == 0) std::filesystem::resize_file(third, 2000);
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string error = errorOf([&] {
    splitDataset(MPI_COMM_WORLD, {dir / "s16", dir / "cut", 8});
  });
  EXPECT_NE(error.find(third), std::string::npos) << error;
  // Each rank removes its own staged files as its error unwinds: look once every rank has.
  MPI_Barrier(MPI_COMM_WORLD);
  if (test::worldRank() != 0) return;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir / "cut"))
    EXPECT_TRUE(e.is_directory()) << e.path() << " was left behind";
}

// Issue 41: a manifest's sample files stay inside the dataset (split would read and write
// through "../"), and each is listed once (a manifest of more samples than files).
TEST(Split, ManifestFilesOutsideTheDatasetOrListedTwiceAreRefused) {
  test::ScratchDir dir;
  writeDataset(dir / "s16");
  const std::string manifest = dir / "s16/manifest.txt";
  std::string text;
  if (test::worldRank() == 0) {
    std::ifstream in(manifest);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::vector<std::pair<std::string, std::string>> edits = {
      {" ../other/train/cosmo_000000.h5 ", "a sample file outside the dataset's directory"},
      {" train/cosmo_000001.h5 ", "sample file train/cosmo_000001.h5 is listed a second time"}};
  for (const auto& edit : edits) {
    if (test::worldRank() == 0) {
      std::string edited = text;
      const std::string first = " train/cosmo_000000.h5 ";
      edited.replace(edited.find(first), first.size(), edit.first);
      std::ofstream(manifest) << edited;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const std::string error = errorOf([&] {
      splitDataset(MPI_COMM_WORLD, {dir / "s16", dir / "cut", 8});
    });
    EXPECT_NE(error.find(manifest + ":"), std::string::npos) << error;
    EXPECT_NE(error.find(edit.second), std::string::npos) << error;
  }
}

TEST(Split, NamesSayWhichPiece) {
  EXPECT_EQ(subvolumeName("train/cosmo_000003.h5", 5, 64), "train/cosmo_000003_s005.h5");
  EXPECT_EQ(subvolumeName("a.h5", 4095, 4096), "a_s4095.h5");
  EXPECT_EQ(subvolumeName("a.h5", 7, 32768), "a_s00007.h5");
}

TEST(Split, BadRequestsFailOnEveryRankNamingTheCulprit) {
  test::ScratchDir dir;
  writeDataset(dir / "s16");
  auto error = [&](const SplitOptions& o) {
    return errorOf([&] { splitDataset(MPI_COMM_WORLD, o); });
  };
  EXPECT_NE(
      error({dir / "s16", dir / "x", 6}).find("--size: 6 does not divide the dataset's size 16"),
      std::string::npos);
  EXPECT_NE(error({dir / "none", dir / "x", 8}).find("none is not a directory (split reads"),
            std::string::npos);
  EXPECT_NE(error({dir / "s16", dir / "s16", 8}).find("is the input directory"), std::string::npos);
  const std::vector<std::pair<std::vector<std::string>, std::string>> flags{
      {{"--in", "a", "--out", "b"}, "--size: missing"},
      {{"--in", "a", "--size", "2"}, "--out: missing"},
      {{"--out", "b", "--size", "2"}, "--in: missing"},
      {{"--in", "a", "--out", "b", "--size", "0"}, "--size: '0'"},
      {{"--in", "a", "--out", "b", "--size", "eight"}, "--size: 'eight'"},
      {{"--in", "a", "--out", "b", "--factor", "2"}, "unknown argument '--factor'"},
  };
  // Not a structured binding: a lambda capturing one is C++20 (clang 14 rejects it).
  for (const auto& flag : flags) {
    const std::vector<std::string>& args = flag.first;
    const std::string& want = flag.second;
    EXPECT_NE(errorOf([&] { parseSplitOptions(args); }).find(want), std::string::npos) << want;
  }
}

}  // namespace
