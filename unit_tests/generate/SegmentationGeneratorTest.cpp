// Segmentation sample files: three classes with lesions only inside the organ, class
// intensities in the order of the scene, and the same file on one rank and on all ranks.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>
#include <mpi.h>

#include <hybrid3d/generate/SegmentationGenerator.hpp>

#include "GenerateTestUtils.hpp"
#include "WorldRank.hpp"

namespace {

using namespace hybrid3d;
using namespace hybrid3d::generate;
using test::worldRank;

TEST(SegmentationGenerator, ThreeClassesWithLesionsOnlyInsideTheOrgan) {
  const Index S = 32;
  test::ScratchDir dir;
  for (std::uint64_t sample = 0; sample < 4; ++sample) {
    const std::string path = dir / ("s" + std::to_string(sample) + ".h5");
    writeSegmentationSample(MPI_COMM_WORLD, {S}, 9, sample, path);
    if (worldRank() != 0) continue;
    SCOPED_TRACE("sample " + std::to_string(sample));
    EXPECT_EQ(data::File(path).shape("/segmentation"), (std::vector<Index>{S, S, S}));
    EXPECT_EQ(data::File(path).shape("/volume"), (std::vector<Index>{1, S, S, S}));
    const auto labels = test::readWhole<int>(path, "/segmentation");
    const auto volume = test::readWhole<float>(path, "/volume");
    const SegmentationScene scene = drawSegmentationScene(S, 9, sample);
    std::vector<Index> count(3, 0);
    std::vector<double> intensity(3, 0.0);
    Index lesionOutsideOrgan = 0, badLabel = 0;
    for (Index d = 0; d < S; ++d)
      for (Index h = 0; h < S; ++h)
        for (Index w = 0; w < S; ++w) {
          const Index i = (d * S + h) * S + w;
          const int l = labels[i];
          if (l < 0 || l > 2) {
            ++badLabel;
            continue;
          }
          ++count[l];
          intensity[l] += volume[i];
          const std::array<double, 3> x{scene.coordinate(d), scene.coordinate(h),
                                        scene.coordinate(w)};
          if (l == 2 && scene.organLevel(x) >= 0) ++lesionOutsideOrgan;
        }
    EXPECT_EQ(badLabel, 0);
    EXPECT_EQ(lesionOutsideOrgan, 0);
    for (int c = 0; c < 3; ++c) EXPECT_GT(count[c], 0) << "class " << c;
    // Mean intensities follow the class intensities of the scene despite bias and noise.
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b)
        if (scene.classIntensity[a] < scene.classIntensity[b]) {
          EXPECT_LT(intensity[a] / count[a], intensity[b] / count[b]) << a << " vs " << b;
        }
  }
}

TEST(SegmentationGenerator, SameFileOnOneRankAndOnAllRanksAndAnotherForAnotherSeed) {
  const Index S = 16;
  test::ScratchDir dir;
  writeSegmentationSample(MPI_COMM_WORLD, {S}, 5, 2, dir / "all.h5");
  writeSegmentationSample(MPI_COMM_WORLD, {S}, 6, 2, dir / "otherSeed.h5");
  {
    test::FirstRanks one(1);
    if (one.inside()) writeSegmentationSample(one.comm(), {S}, 5, 2, dir / "one.h5");
  }
  if (worldRank() == 0) {
    EXPECT_EQ(test::readWhole<float>(dir / "all.h5", "/volume"),
              test::readWhole<float>(dir / "one.h5", "/volume"));
    EXPECT_EQ(test::readWhole<int>(dir / "all.h5", "/segmentation"),
              test::readWhole<int>(dir / "one.h5", "/segmentation"));
    EXPECT_NE(test::readWhole<float>(dir / "all.h5", "/volume"),
              test::readWhole<float>(dir / "otherSeed.h5", "/volume"));
  }
}

}  // namespace
