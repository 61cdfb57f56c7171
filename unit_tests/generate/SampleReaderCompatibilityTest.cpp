// The generated files are what the training pipeline reads: data::SampleReader accepts them
// (docs/design.md section 7 layout, types and shapes) and delivers the values that were written.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>
#include <mpi.h>

#include <hybrid3d/data/SampleReader.hpp>
#include <hybrid3d/generate/CosmologyGenerator.hpp>
#include <hybrid3d/generate/SegmentationGenerator.hpp>

#include "GenerateTestUtils.hpp"

namespace {

using namespace hybrid3d;
using namespace hybrid3d::generate;

// The whole S^3 box as one rank's subvolume.
data::Subvolume wholeBox(Index S) {
  data::Subvolume sub;
  sub.extents = {S, S, S};
  sub.owned = sub.local = sub.read = Box3{{0, 0, 0}, {S, S, S}};
  return sub;
}

TEST(GeneratedFiles, ReadBackThroughTheSampleReader) {
  const Index S = 16;
  test::ScratchDir dir;
  writeCosmologySample(MPI_COMM_WORLD, {S, 8.0}, CosmologyParameters{}, 2, 0, dir / "c.h5");
  writeSegmentationSample(MPI_COMM_WORLD, {S}, 2, 0, dir / "s.h5");
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return;

  data::SampleReader cosmo(MPI_COMM_SELF, data::SampleSpec::cosmology(4, {S, S, S}), wholeBox(S),
                           data::ReadMode::Independent);
  std::vector<std::int16_t> full(4 * S * S * S);
  std::vector<float> targets(4);
  const data::SampleFormat cf = cosmo.read(dir / "c.h5", full.data(), nullptr, targets.data());
  EXPECT_TRUE(cf.type == data::StoredType::Int16 && !cf.channelsLast);
  EXPECT_EQ(full, test::readWhole<std::int16_t>(dir / "c.h5", "/full"));
  EXPECT_EQ(targets, test::readWhole<float>(dir / "c.h5", "/unitPar"));

  data::SampleReader seg(MPI_COMM_SELF, data::SampleSpec::segmentation(1, {S, S, S}), wholeBox(S),
                         data::ReadMode::Independent);
  std::vector<float> volume(S * S * S);
  std::vector<int> labels(S * S * S);
  const data::SampleFormat sf = seg.read(dir / "s.h5", volume.data(), labels.data(), nullptr);
  EXPECT_TRUE(sf.type == data::StoredType::Float32 && !sf.channelsLast);
  EXPECT_EQ(volume, test::readWhole<float>(dir / "s.h5", "/volume"));
  EXPECT_EQ(labels, test::readWhole<int>(dir / "s.h5", "/segmentation"));
}

}  // namespace
