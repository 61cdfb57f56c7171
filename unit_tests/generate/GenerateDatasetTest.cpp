// `hybrid3d generate` as a whole: flag errors name the flag, bad output directories and rank
// counts are refused on every rank, the manifest matches the files, a dataset is the same on
// one rank and on all ranks, and files appear under their final name only when complete.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mpi.h>

#include <hybrid3d/generate/GenerateDataset.hpp>
#include <hybrid3d/generate/SampleWriter.hpp>

#include "ErrorOf.hpp"
#include "GenerateTestUtils.hpp"
#include "WorldRank.hpp"

namespace {

using namespace hybrid3d;
using namespace hybrid3d::generate;
namespace fs = std::filesystem;
using test::errorOf;
using test::worldRank;

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < line.size()) {
    const std::size_t end = line.find(' ', start);
    out.push_back(line.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

TEST(GenerateOptions, BadFlagsGiveOneLineNamingTheFlag) {
  const std::string ok = "cosmology --out D --size 16 --train 1";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"", "generator"},
      {"galaxies --out D --size 16 --train 1", "galaxies"},
      {ok + " --bogus 3", "--bogus"},
      {ok + " --seed", "--seed"},
      {ok + " --seed -4", "--seed"},
      {"cosmology --out D --size sixteen --train 1", "--size"},
      {"cosmology --out D --size 4 --train 1", "--size"},
      {"cosmology --out D --train 1", "--size"},
      {"cosmology --size 16 --train 1", "--out"},
      {"cosmology --out D --size 16 --train x", "--train"},
      {"cosmology --out D --size 16", "--train"},
      {ok + " --params 1,2,3", "--params"},
      {ok + " --params 0.9,-2,0.6,1,7", "--params"},
      {ok + " --params 0.9,-9,0.6,1", "slope"},
      {ok + " --mean-count 0", "--mean-count"},
      {"segmentation --out D --size 16 --train 1 --params 0.9,-2,0.6,1", "--params"},
  };
  for (const auto& c : cases) {
    // Plain references, not a structured binding: the lambda below captures `line`, and
    // capturing a structured binding is C++20 (nvcc warns; clang before 16 refuses it).
    const std::string& line = c.first;
    const std::string& named = c.second;
    const std::string message = errorOf([&] { parseGenerateOptions(words(line)); });
    EXPECT_NE(message.find(named), std::string::npos)
        << "'" << line << "' gave '" << message << "'";
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  const GenerateOptions o = parseGenerateOptions(
      words(ok + " --validation 2 --test 3 --seed 18446744073709551615 --params 0.9,-2,0.6,1"));
  EXPECT_EQ(o.size, 16);
  EXPECT_EQ(o.train + o.validation + o.test, 6);
  EXPECT_EQ(o.seed, UINT64_MAX);
  ASSERT_TRUE(o.fixedParameters.has_value());
  EXPECT_EQ(o.fixedParameters->slope, -2.0);
}

TEST(GenerateDataset, UnusableDirectoryOrTooManyRanksFailOnEveryRank) {
  test::ScratchDir dir;
  if (worldRank() == 0) std::ofstream(dir / "plainFile") << "not a directory\n";
  MPI_Barrier(MPI_COMM_WORLD);
  GenerateOptions o = parseGenerateOptions(
      words("cosmology --out " + (dir / "plainFile/data") + " --size 16 --train 1"));
  std::string message = errorOf([&] { generateDataset(MPI_COMM_WORLD, o); });
  EXPECT_NE(message.find("--out"), std::string::npos) << message;
  EXPECT_NE(message.find("plainFile/data"), std::string::npos) << message;

  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  o.outDir = dir / "data";
  o.size = ranks - 1;  // one plane short of one per rank
  message = errorOf([&] { generateDataset(MPI_COMM_WORLD, o); });
  EXPECT_NE(message.find("--size"), std::string::npos) << message;
}

TEST(GenerateDataset, ManifestMatchesTheFilesAndUnitParIsInRange) {
  test::ScratchDir dir;
  const GenerateOptions o = parseGenerateOptions(words(
      "cosmology --out " + dir.path() + " --size 16 --train 3 --validation 1 --test 2 --seed 4"));
  const Manifest made = generateDataset(MPI_COMM_WORLD, o);
  if (worldRank() != 0) return;
  const Manifest m = readManifest(dir / "manifest.txt");
  EXPECT_EQ(m.generator, "cosmology");
  EXPECT_EQ(m.size, 16);
  EXPECT_EQ(m.seed, 4u);
  ASSERT_EQ(m.samples.size(), 6u);
  ASSERT_EQ(m.parameters.size(), 4u);
  std::vector<std::string> seenSplits;
  for (std::size_t i = 0; i < m.samples.size(); ++i) {
    const ManifestSample& s = m.samples[i];
    SCOPED_TRACE(s.file);
    EXPECT_EQ(s.file.substr(0, s.split.size() + 1), s.split + "/");
    EXPECT_EQ(s.parameters, made.samples[i].parameters);  // exact round trip
    EXPECT_EQ(s.unitPar, made.samples[i].unitPar);
    const auto unitPar = test::readWhole<float>(dir / s.file, "/unitPar");
    EXPECT_EQ(unitPar, s.unitPar);
    const auto expected = toUnitParameters(CosmologyParameters::fromValues(
        {s.parameters[0], s.parameters[1], s.parameters[2], s.parameters[3]}));
    EXPECT_EQ(unitPar, std::vector<float>(expected.begin(), expected.end()));
    for (float u : unitPar) {
      EXPECT_GE(u, -1.0f);
      EXPECT_LE(u, 1.0f);
    }
    for (int k = 0; k < 4; ++k) {
      EXPECT_GE(s.parameters[k], m.parameters[k].lo);
      EXPECT_LE(s.parameters[k], m.parameters[k].hi);
    }
    seenSplits.push_back(s.split);
  }
  EXPECT_EQ(seenSplits,
            (std::vector<std::string>{"train", "train", "train", "validation", "test", "test"}));
  // Only sample files and the manifest: no temporaries left behind.
  Index files = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir.path()))
    if (e.is_regular_file()) {
      ++files;
      EXPECT_TRUE(e.path().extension() == ".h5" || e.path().filename() == "manifest.txt")
          << e.path();
    }
  EXPECT_EQ(files, 7);
}

TEST(GenerateDataset, SameDatasetOnOneRankAndOnAllRanks) {
  test::ScratchDir dir;
  for (const std::string generator : {"cosmology", "segmentation"}) {
    SCOPED_TRACE(generator);
    // --replace: the second generator's dataset replaces the first's in the same directories.
    const std::string args = generator + " --size 16 --train 2 --test 1 --seed 77 --replace --out ";
    generateDataset(MPI_COMM_WORLD, parseGenerateOptions(words(args + (dir / "all"))));
    {
      test::FirstRanks one(1);
      if (one.inside())
        generateDataset(one.comm(), parseGenerateOptions(words(args + (dir / "one"))));
    }
    if (worldRank() == 0) {
      const Manifest m = readManifest(dir / "all/manifest.txt");
      for (const ManifestSample& s : m.samples) {
        SCOPED_TRACE(s.file);
        if (generator == "cosmology") {
          EXPECT_EQ(test::readWhole<std::int16_t>(dir / ("all/" + s.file), "/full"),
                    test::readWhole<std::int16_t>(dir / ("one/" + s.file), "/full"));
        } else {
          EXPECT_EQ(test::readWhole<float>(dir / ("all/" + s.file), "/volume"),
                    test::readWhole<float>(dir / ("one/" + s.file), "/volume"));
          EXPECT_EQ(test::readWhole<int>(dir / ("all/" + s.file), "/segmentation"),
                    test::readWhole<int>(dir / ("one/" + s.file), "/segmentation"));
        }
      }
      std::ifstream a(dir / "all/manifest.txt"), b(dir / "one/manifest.txt");
      EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}),
                std::string(std::istreambuf_iterator<char>(b), {}));
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

TEST(SampleWriter, NothingUnderTheFinalNameUntilCommitted) {
  test::ScratchDir dir;
  const std::string path = dir / "sample.h5";
  const std::vector<float> data(4, 1.0f);
  {
    SampleWriter interrupted(MPI_COMM_WORLD, path);
    interrupted.writeWhole("unitPar", {4}, data.data());
    EXPECT_FALSE(fs::exists(path));
    // Destroyed without commit(), as when an error unwinds the generator.
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  {
    SampleWriter complete(MPI_COMM_WORLD, path);
    complete.writeWhole("unitPar", {4}, data.data());
    complete.commit();
  }
  EXPECT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

}  // namespace
