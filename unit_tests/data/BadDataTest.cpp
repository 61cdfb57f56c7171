#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/data/SampleReader.hpp>

#include "GridCases.hpp"
#include "SampleFiles.hpp"

namespace hybrid3d::test {
namespace {

using data::ReadMode;

const Index3 kExtents{6, 5, 4};
const int kChannels = 2;

struct BadCase {
  std::string file;     // a name under the scratch directory
  std::string problem;  // a substring the message must hold
};

// Writes one file per kind of damage; returns the cases.
std::vector<BadCase> writeBadFiles() {
  const SampleData good = makeSample(kChannels, kExtents, 5);
  const SampleData threeChannels = makeSample(kChannels + 1, kExtents, 5);
  std::vector<BadCase> cases = {
      {"missing.h5", "cannot open file"},
      {"text.h5", "not an HDF5 file"},
      {"truncated.h5", "truncated"},
      {"no_full.h5", "no dataset '/full'"},
      {"rank3.h5", "has rank 3"},
      {"shape.h5", "has shape [3,6,5,4]; expected [C,D,H,W] = [2,6,5,4]"},
      {"float64.h5", "has type float64; expected float32 or int16"},
      {"int32.h5", "has type int32; expected float32 or int16"},
      {"targets.h5", "dataset '/unitPar' has shape [3]"},
      {"dhwc_shape.h5", "expected [D,H,W,C] = [6,5,4,2]"},
  };
  onRankZero([&] {
    std::ofstream(scratch("text.h5")) << "this is not HDF5\n";
    writeSample(scratch("truncated.h5"), good, {});
    std::filesystem::resize_file(scratch("truncated.h5"),
                                 std::filesystem::file_size(scratch("truncated.h5")) / 2);
    writeSample(scratch("no_full.h5"), good, {"/other"});
    {
      data::Handle f(
          H5Fcreate(scratch("rank3.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
          H5Fclose);
      writeDataset(f, "/full", H5T_NATIVE_FLOAT, H5T_NATIVE_FLOAT, {6, 5, 4}, good.input.data());
      writeDataset(f, "/unitPar", H5T_NATIVE_FLOAT, H5T_NATIVE_FLOAT, {4}, good.targets.data());
    }
    writeSample(scratch("shape.h5"), threeChannels, {});
    writeSample(scratch("float64.h5"), good, {"/full", FileType::Float64LE});
    writeSample(scratch("int32.h5"), good, {"/full", FileType::Int32LE});
    {
      data::Handle f(
          H5Fcreate(scratch("targets.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
          H5Fclose);
      writeDataset(f, "/full", H5T_NATIVE_FLOAT, H5T_NATIVE_FLOAT, {2, 6, 5, 4}, good.input.data());
      writeDataset(f, "/unitPar", H5T_NATIVE_FLOAT, H5T_NATIVE_FLOAT, {3}, good.targets.data());
    }
    writeSample(scratch("dhwc_shape.h5"), threeChannels,
                {"/full", FileType::NativeFloat, TestLayout::DHWC});
  });
  return cases;
}

// Reads `path` on this rank's grid; returns the message every rank got ("" when none threw).
std::string readError(const ProcessGrid& grid, const std::string& path, ReadMode mode) {
  const BlockDecomposition dec(kExtents, grid.dims());
  const data::Subvolume sub(dec, grid.coords(), GhostWidths::uniform(1));
  data::SampleReader reader(grid.spatialComm(), data::SampleSpec::cosmology(kChannels, kExtents),
                            sub, mode);
  std::vector<unsigned char> input(reader.inputCapacityBytes());
  std::vector<float> targets(4);
  try {
    if (mode == ReadMode::Collective)
      reader.read(path, input.data(), nullptr, targets.data());
    else  // independent reads leave the verdict to the caller (the loader agrees over the world)
      data::collectively(grid.spatialComm(),
                         [&] { reader.read(path, input.data(), nullptr, targets.data()); });
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SampleReader, EachBadFileGivesItsOneLineMessageOnEveryRank) {
  const std::vector<BadCase> cases = writeBadFiles();
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    for (const BadCase& c : cases)
      for (ReadMode mode : {ReadMode::Collective, ReadMode::Independent}) {
        const std::string path = scratch(c.file);
        const std::string m = readError(grid, path, mode);
        const bool ok = m.find(path) != std::string::npos &&
                        m.find(c.problem) != std::string::npos && m.find('\n') == std::string::npos;
        EXPECT_TRUE(ok) << c.file << ": message '" << m << "'";
        EXPECT_TRUE(allTrue(ok, grid.worldComm())) << c.file;
      }
  });
}

TEST(SampleReader, AFileBadOnlyInSomeRanksViewFailsOnEveryRankWithoutHanging) {
  // Spatial rank 0 sees a missing file where the others see a good one (as when a node's view
  // of a shared file system lags): every rank must leave the collective read with rank 0's
  // message instead of waiting in MPI-IO for it.
  writeBadFiles();
  const std::string good = scratch("good_view.h5");
  onRankZero([&] { writeSample(good, makeSample(kChannels, kExtents, 6), {}); });
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const std::string path = grid.spatialRank() == 0 ? scratch("missing.h5") : good;
    const std::string m = readError(grid, path, ReadMode::Collective);
    const bool ok = m.find(scratch("missing.h5")) != std::string::npos &&
                    m.find("cannot open file") != std::string::npos;
    EXPECT_TRUE(ok) << m;
    EXPECT_TRUE(allTrue(ok, grid.worldComm()));
  });
}

TEST(SampleReader, RefusesASpecThatDoesNotMatchTheTensor) {
  const BlockDecomposition dec({4, 4, 4}, {1, 1, 1});
  const data::Subvolume sub(dec, {0, 0, 0}, {});
  EXPECT_THROW(data::SampleReader(MPI_COMM_SELF, data::SampleSpec::cosmology(4, {8, 8, 8}), sub,
                                  ReadMode::Independent),
               Error);
  EXPECT_THROW(data::SampleReader(MPI_COMM_SELF, data::SampleSpec::cosmology(0, {4, 4, 4}), sub,
                                  ReadMode::Independent),
               Error);
}

}  // namespace
}  // namespace hybrid3d::test
