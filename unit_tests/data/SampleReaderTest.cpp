#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/data/Preprocess.hpp>
#include <hybrid3d/data/SampleReader.hpp>

#include "GridCases.hpp"
#include "ReadSample.hpp"
#include "SampleFiles.hpp"

namespace hybrid3d::test {
namespace {

[[maybe_unused]] auto* const scratchEnvironment =
    ::testing::AddGlobalTestEnvironment(new ScratchDir);

using data::ReadMode;
using data::SampleSpec;

const Index3 kExtents{7, 6, 5};
const int kChannels = 3;

std::vector<GhostWidths> ghostCases() {
  return {GhostWidths{}, GhostWidths::uniform(1), GhostWidths{{1, 0, 2}, {0, 2, 1}}};
}

// One file per stored form, all holding the same sample.
struct FileSet {
  SampleData data = makeSample(kChannels, kExtents, 11);
  std::string floatCDHW = scratch("f32_cdhw.h5"), int16CDHW = scratch("i16_cdhw.h5"),
              floatDHWC = scratch("f32_dhwc.h5"), int16DHWCOnDataset = scratch("i16_dhwc_ds.h5"),
              segmentation = scratch("seg.h5");
  FileSet() {
    onRankZero([&] {
      writeSample(floatCDHW, data, {});
      writeSample(int16CDHW, data, {"/full", FileType::Int16LE, TestLayout::CDHW});
      writeSample(floatDHWC, data, {"/full", FileType::Float32LE, TestLayout::DHWC});
      writeSample(int16DHWCOnDataset, data,
                  {"/full", FileType::Int16BE, TestLayout::DHWCOnDataset});
      writeSample(
          segmentation, data,
          {"/volume", FileType::NativeFloat, TestLayout::CDHW, true, FileType::UInt8LE, false});
    });
  }
  std::vector<std::string> inputs() const {
    return {floatCDHW, int16CDHW, floatDHWC, int16DHWCOnDataset};
  }
};

const FileSet& files() {
  static FileSet set;
  return set;
}

// Every local cell of x holds the file's value inside the domain and zero outside.
void expectBoxOfWholeFile(const DistTensor<float>& x, const data::File& whole,
                          const std::string& what, const std::string& dataset = "/full") {
  const std::vector<float> all = whole.read<float>(dataset);
  const bool last =
      whole.hasAttribute("layout") || H5Aexists(whole.openDataset(dataset), "layout") > 0;
  const Index3& e = x.globalExtents();
  const Index C = x.channels();
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x.view());
  const Box3 local = x.localBox();
  Index wrong = 0;
  for (Index c = 0; c < C; ++c)
    for (Index d = local.lo[0]; d < local.hi[0]; ++d)
      for (Index hh = local.lo[1]; hh < local.hi[1]; ++hh)
        for (Index w = local.lo[2]; w < local.hi[2]; ++w) {
          const bool inside = d >= 0 && d < e[0] && hh >= 0 && hh < e[1] && w >= 0 && w < e[2];
          const float want = !inside ? 0.0f
                             : last  ? all[std::size_t(((d * e[1] + hh) * e[2] + w) * C + c)]
                                     : all[std::size_t(((c * e[0] + d) * e[1] + hh) * e[2] + w)];
          const float got = h(0, c, x.localIndex(0, d), x.localIndex(1, hh), x.localIndex(2, w));
          if (got != want && wrong++ < 3)
            ADD_FAILURE() << what << ": voxel (" << d << "," << hh << "," << w << ") c=" << c
                          << " got " << got << " want " << want;
        }
  EXPECT_EQ(wrong, 0) << what;
}

TEST(SampleReader, SubvolumeEqualsTheBoxOfAWholeFileRead) {
  const FileSet& set = files();
  const SampleSpec spec = SampleSpec::cosmology(kChannels, kExtents);
  const int ran = forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    for (const std::string& path : set.inputs()) {
      const data::File whole(path);  // the reference: this rank reads everything, once
      for (const GhostWidths& g : ghostCases())
        for (ReadMode mode : {ReadMode::Collective, ReadMode::Independent}) {
          const ReadResult r = readOne(grid, path, spec, g, mode);
          expectBoxOfWholeFile(
              r.x, whole, path + (mode == ReadMode::Collective ? " collective" : " independent"));
          EXPECT_EQ(r.targets, whole.read<float>("/unitPar"));
        }
    }
  });
  EXPECT_GE(ran, 1);
}

TEST(SampleReader, ChannelsLastAndChannelsFirstFilesGiveTheSameTensor) {
  const FileSet& set = files();
  const SampleSpec spec = SampleSpec::cosmology(kChannels, kExtents);
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const GhostWidths g{{1, 0, 2}, {0, 2, 1}};
    const ReadResult first = readOne(grid, set.floatCDHW, spec, g, ReadMode::Collective);
    auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), first.x.view());
    EXPECT_FALSE(first.format.channelsLast);
    for (const std::string& path : {set.floatDHWC, set.int16DHWCOnDataset, set.int16CDHW}) {
      const ReadResult other = readOne(grid, path, spec, g, ReadMode::Independent);
      auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), other.x.view());
      ASSERT_EQ(a.size(), b.size());
      Index differ = 0;
      for (std::size_t i = 0; i < a.size(); ++i) differ += a.data()[i] != b.data()[i];
      EXPECT_EQ(differ, 0) << path;
    }
  });
}

TEST(SampleReader, CollectiveAndIndependentReadsGiveIdenticalTensors) {
  const FileSet& set = files();
  const SampleSpec spec = SampleSpec::cosmology(kChannels, kExtents);
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    for (const std::string& path : set.inputs()) {
      const ReadResult c = readOne(grid, path, spec, GhostWidths::uniform(1), ReadMode::Collective);
      const ReadResult i =
          readOne(grid, path, spec, GhostWidths::uniform(1), ReadMode::Independent);
      auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c.x.view());
      auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), i.x.view());
      Index differ = 0;
      for (std::size_t k = 0; k < a.size(); ++k) differ += a.data()[k] != b.data()[k];
      EXPECT_EQ(differ, 0) << path;
      EXPECT_EQ(c.format, i.format) << path;
      EXPECT_EQ(c.counters.inputBytes, i.counters.inputBytes) << path;
    }
  });
}

TEST(SampleReader, BytesReadAreTheOwnedPlusGhostBoxNotTheSample) {
  const FileSet& set = files();
  const SampleSpec spec = SampleSpec::cosmology(kChannels, kExtents);
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    for (const GhostWidths& g : ghostCases())
      for (const std::string& path : {set.floatCDHW, set.int16CDHW}) {
        const ReadResult r = readOne(grid, path, spec, g, ReadMode::Collective);
        const Index elem = path == set.int16CDHW ? 2 : 4;
        // The in-domain part of the local box, counted independently of the reader.
        Index inDomain = 0;
        const Box3 local = r.x.localBox();
        for (Index d = local.lo[0]; d < local.hi[0]; ++d)
          for (Index h = local.lo[1]; h < local.hi[1]; ++h)
            for (Index w = local.lo[2]; w < local.hi[2]; ++w)
              inDomain += d >= 0 && d < kExtents[0] && h >= 0 && h < kExtents[1] && w >= 0 &&
                          w < kExtents[2];
        EXPECT_EQ(r.counters.inputBytes, std::uint64_t(kChannels * inDomain * elem)) << path;
        EXPECT_EQ(r.counters.targetBytes, 4 * sizeof(float));
        EXPECT_EQ(r.counters.samples, 1u);
        // Without ghosts the group's reads tile the sample exactly once.
        if (g.none()) {
          const std::uint64_t sample = kChannels * kExtents[0] * kExtents[1] * kExtents[2] * elem;
          std::uint64_t total = r.counters.inputBytes;
          MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_UINT64_T, MPI_SUM, grid.spatialComm());
          EXPECT_EQ(total, sample);
          if (grid.spatialSize() > 1) {
            EXPECT_LT(r.counters.inputBytes, sample);
          }
        }
      }
  });
}

TEST(SampleReader, LabelsAreReadByHyperslabOfTheOwnedBox) {
  const FileSet& set = files();
  const SampleSpec spec = SampleSpec::segmentation(kChannels, kExtents);
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    for (ReadMode mode : {ReadMode::Collective, ReadMode::Independent}) {
      const ReadResult r = readOne(grid, set.segmentation, spec, GhostWidths::uniform(1), mode);
      const data::File whole(set.segmentation);
      const std::vector<int> all = whole.read<int>("/segmentation");
      const Box3& o = r.x.owned();
      ASSERT_EQ(r.labels.size(), std::size_t(o.size()));
      Index wrong = 0;
      std::size_t i = 0;
      for (Index d = o.lo[0]; d < o.hi[0]; ++d)
        for (Index h = o.lo[1]; h < o.hi[1]; ++h)
          for (Index w = o.lo[2]; w < o.hi[2]; ++w)
            wrong += r.labels[i++] != all[std::size_t((d * kExtents[1] + h) * kExtents[2] + w)];
      EXPECT_EQ(wrong, 0);
      EXPECT_EQ(r.counters.labelBytes, std::uint64_t(o.size()));  // stored as uint8
      expectBoxOfWholeFile(r.x, whole, "segmentation volume", "/volume");
      EXPECT_TRUE(r.targets.empty());
    }
  });
}

TEST(SampleReader, RanksWithAnEmptyBoxTakePartInCollectiveReads) {
  // A sample thinner than the grid: some ranks own nothing, read nothing (zero bytes), and
  // still join the collective calls, so the others' reads complete.
  const Index3 thin{2, 1, 3};
  const std::string path = scratch("thin.h5");
  onRankZero([&] { writeSample(path, makeSample(2, thin, 21), {}); });
  const SampleSpec spec = SampleSpec::cosmology(2, thin);
  const int ran = forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const data::File whole(path);
    for (ReadMode mode : {ReadMode::Collective, ReadMode::Independent}) {
      const ReadResult r = readOne(grid, path, spec, GhostWidths::uniform(1), mode);
      expectBoxOfWholeFile(r.x, whole, "thin sample");
      if (r.x.owned().empty()) {
        EXPECT_EQ(r.counters.inputBytes, 0u);
      }
    }
  });
  EXPECT_GE(ran, 1);
}

}  // namespace
}  // namespace hybrid3d::test
