// The formats users already have (issue 30): the published CosmoFlow HDF5 files (channels-last,
// no layout attribute, *.hdf5, chunked and compressed) and the MLPerf HPC numpy release
// (NAME.data.npy beside NAME.label.npy) give every rank exactly the box the project's own
// [C,D,H,W] file gives it; a file that cannot be read is one line naming it, on every rank.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/data/Dataset.hpp>
#include <hybrid3d/data/InputLayout.hpp>
#include <hybrid3d/data/SampleReader.hpp>

#include "GridCases.hpp"
#include "ReadSample.hpp"
#include "SampleFiles.hpp"

namespace hybrid3d::test {
namespace {

using data::LayoutChoice;
using data::ReadMode;
using data::SampleSpec;

const Index3 kExtents{7, 6, 5};  // uneven over every grid
const int kChannels = 3;

// The same sample in every stored form; `own` is the project's own layout.
struct FormatFiles {
  SampleData data = makeSample(kChannels, kExtents, 17);
  std::string own = scratch("fmt_own.h5");
  std::vector<std::string> others = {
      scratch("fmt_i16_dhwc.hdf5"),        scratch("fmt_f32_dhwc_deflate.hdf5"),
      scratch("fmt_i16_dhwc_deflate.h5"),  scratch("fmt_f32_cdhw_deflate.h5"),
      scratch("fmt_i16_dhwc.data.npy"),    scratch("fmt_f32_cdhw_v2.data.npy"),
      scratch("fmt_f32_dhwc_v3.data.npy"), scratch("fmt_i16_dhwc_physpar.h5")};
  FormatFiles() {
    onRankZero([&] {
      writeSample(own, data, {});
      writeSample(others[0], data, {"/full", FileType::Int16LE, TestLayout::DHWCBare});
      WriteOptions o{"/full", FileType::Float32LE, TestLayout::DHWCBare};
      o.chunked = true;
      writeSample(others[1], data, o);
      o.fileType = FileType::Int16LE;
      writeSample(others[2], data, o);
      o.fileType = FileType::Float32LE;
      o.layout = TestLayout::CDHW;
      writeSample(others[3], data, o);
      writeNpySample(others[4], data, true);
      NpyWrite f32;
      f32.descr = "<f4";
      f32.version = 2;
      writeNpySample(others[5], data, false, f32);
      f32.version = 3;
      writeNpySample(others[6], data, true, f32);
      WriteOptions physPar{"/full", FileType::Int16LE, TestLayout::DHWCBare};
      physPar.targetsName = "/physPar";
      writeSample(others[7], data, physPar);
    });
  }
  static SampleSpec specFor(const std::string& path) {
    SampleSpec spec = SampleSpec::cosmology(kChannels, kExtents);
    if (path.find("physpar") != std::string::npos) spec.targets = "/physPar";  // the deck key
    return spec;
  }
};

const FormatFiles& formatFiles() {
  static FormatFiles set;
  return set;
}

std::vector<GhostWidths> ghostCases() { return {GhostWidths{}, GhostWidths{{1, 0, 2}, {0, 2, 1}}}; }

// Bit for bit the same tensor, and every in-domain value the sample's (ghosts outside zero).
void expectSameTensor(const ReadResult& want, const ReadResult& got, const SampleData& sample,
                      const std::string& what) {
  auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), want.x.view());
  auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), got.x.view());
  ASSERT_EQ(a.size(), b.size()) << what;
  Index differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ += a.data()[i] != b.data()[i];
  EXPECT_EQ(differ, 0) << what;
  const Box3 local = got.x.localBox();
  Index wrong = 0;
  for (int c = 0; c < kChannels; ++c)
    for (Index d = local.lo[0]; d < local.hi[0]; ++d)
      for (Index h = local.lo[1]; h < local.hi[1]; ++h)
        for (Index w = local.lo[2]; w < local.hi[2]; ++w) {
          const bool inside =
              d >= 0 && d < kExtents[0] && h >= 0 && h < kExtents[1] && w >= 0 && w < kExtents[2];
          const float v =
              b(0, c, got.x.localIndex(0, d), got.x.localIndex(1, h), got.x.localIndex(2, w));
          wrong += v != (inside ? sample.at(c, d, h, w) : 0.0f);
        }
  EXPECT_EQ(wrong, 0) << what;
  EXPECT_EQ(got.targets, sample.targets) << what;
}

TEST(SampleFormats, EveryFormatGivesTheBoxTheProjectsOwnLayoutGives) {
  const FormatFiles& set = formatFiles();
  const int ran = forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    for (const GhostWidths& g : ghostCases())
      for (ReadMode mode : {ReadMode::Collective, ReadMode::Independent}) {
        const SampleSpec spec = SampleSpec::cosmology(kChannels, kExtents);
        const ReadResult own = readOne(grid, set.own, spec, g, mode);
        for (const std::string& path : set.others) {
          const ReadResult r = readOne(grid, path, FormatFiles::specFor(path), g, mode);
          const std::string what =
              path + (mode == ReadMode::Collective ? " collective" : " independent");
          expectSameTensor(own, r, set.data, what);
          // Only the box: every channel of the in-domain ghosted box, at the stored size.
          const bool int16 = path.find("i16") != std::string::npos;
          EXPECT_EQ(r.counters.inputBytes, own.counters.inputBytes / (int16 ? 2 : 1)) << what;
          EXPECT_EQ(r.format.channelsLast, path.find("dhwc") != std::string::npos) << what;
        }
      }
  });
  EXPECT_GE(ran, 1);
}

TEST(SampleFormats, TheDecksLayoutKeyReadsABareChannelsLastFile) {
  const FormatFiles& set = formatFiles();
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    SampleSpec spec = SampleSpec::cosmology(kChannels, kExtents);
    spec.layout = LayoutChoice::DHWC;  // the bare channels-last file read as the deck says
    const ReadResult r =
        readOne(grid, set.others[0], spec, GhostWidths::uniform(1), ReadMode::Independent);
    EXPECT_TRUE(r.format.channelsLast);
  });
}

// --- Files it must refuse ------------------------------------------------------------------

struct BadCase {
  std::string file;     // under the scratch directory
  std::string problem;  // a fragment of the one line
  LayoutChoice layout = LayoutChoice::Auto;
};

std::vector<BadCase> writeBadFormatFiles() {
  const SampleData good = makeSample(kChannels, kExtents, 9);
  const SampleData twoChannels = makeSample(2, kExtents, 9);
  const std::string bytes = std::to_string(kChannels * 7 * 6 * 5 * 2);
  std::vector<BadCase> cases = {
      {"npy_text.data.npy", "not a numpy .npy file"},
      {"npy_truncated.data.npy",
       "holds 100 data bytes but its header's shape [7,6,5,3] of '<i2' needs " + bytes},
      {"npy_float64.data.npy", "has dtype '<f8'; expected '<i2' (int16) or '<f4' (float32)"},
      {"npy_big_endian.data.npy", "is big-endian ('>i2')"},
      {"npy_fortran.data.npy", "is in Fortran order"},
      {"npy_header_lies.data.npy", "header claims 60000 bytes but the file holds"},
      {"npy_shape_lies.data.npy", "its header's shape [7,6,5,4] of '<i2' needs 1680"},
      {"npy_no_layout.data.npy",
       "array has shape [7,6,5,2]; expected [C,D,H,W] = [3,7,6,5] or [D,H,W,C] = [7,6,5,3]"},
      {"npy_no_label.data.npy", "npy_no_label.label.npy beside it"},
      {"npy_label_float64.data.npy", "expected '<f4' (float32 targets of"},
      {"npy_version.data.npy", "format version 4.0"},
      {"bare_no_layout.hdf5",
       "dataset '/full' has shape [7,6,5,2]; expected [C,D,H,W] = [3,7,6,5] or [D,H,W,C] = "
       "[7,6,5,3]"},
      {"attribute_conflict.h5",
       "has the attribute layout = \"DHWC\" but the deck's 'Data/layout' is CDHW",
       LayoutChoice::CDHW},
      // The attribute is read as h5py wrote it (UTF-8), not skipped as unreadable.
      {"attribute_conflict_h5py.h5",
       "has the attribute layout = \"DHWC\" but the deck's 'Data/layout' is CDHW",
       LayoutChoice::CDHW},
      {"deck_layout_wrong.hdf5",
       "has shape [7,6,5,3]; expected [C,D,H,W] = [3,7,6,5] (layout CDHW from the deck's "
       "'Data/layout')",
       LayoutChoice::CDHW},
  };
  onRankZero([&] {
    auto path = [](const std::string& name) { return scratch(name); };
    std::ofstream(path("npy_text.data.npy")) << "not numpy\n";
    NpyWrite cut;
    cut.cut = 128 + 100;  // prefix and header: 128 bytes
    writeNpySample(path("npy_truncated.data.npy"), good, true, cut);
    NpyWrite f8;
    f8.descr = "<f8";
    writeNpySample(path("npy_float64.data.npy"), good, true, f8);
    NpyWrite be;
    be.descr = ">i2";
    writeNpySample(path("npy_big_endian.data.npy"), good, true, be);
    NpyWrite fortran;
    fortran.fortran = true;
    writeNpySample(path("npy_fortran.data.npy"), good, true, fortran);
    NpyWrite header;
    header.claimedHeader = 60000;
    writeNpySample(path("npy_header_lies.data.npy"), good, true, header);
    NpyWrite shape;
    shape.shapeText = "7, 6, 5, 4";
    writeNpySample(path("npy_shape_lies.data.npy"), good, true, shape);
    writeNpySample(path("npy_no_layout.data.npy"), twoChannels, true);
    writeNpySample(path("npy_no_label.data.npy"), good, true);
    std::filesystem::remove(path("npy_no_label.label.npy"));
    writeNpySample(path("npy_label_float64.data.npy"), good, true);
    writeNpy(path("npy_label_float64.label.npy"), {4}, good.targets, f8);
    NpyWrite version;
    version.version = 4;
    writeNpySample(path("npy_version.data.npy"), good, true, version);
    writeSample(path("bare_no_layout.hdf5"), twoChannels,
                {"/full", FileType::Int16LE, TestLayout::DHWCBare});
    writeSample(path("attribute_conflict.h5"), good,
                {"/full", FileType::Int16LE, TestLayout::DHWC});
    writeSample(path("attribute_conflict_h5py.h5"), good,
                {"/full", FileType::Int16LE, TestLayout::DHWCh5py});
    writeSample(path("deck_layout_wrong.hdf5"), good,
                {"/full", FileType::Int16LE, TestLayout::DHWCBare});
  });
  return cases;
}

std::string readError(const ProcessGrid& grid, const BadCase& c, ReadMode mode) {
  SampleSpec spec = SampleSpec::cosmology(kChannels, kExtents);
  spec.layout = c.layout;
  try {
    if (mode == ReadMode::Collective)
      readOne(grid, scratch(c.file), spec, GhostWidths::uniform(1), mode);
    else  // independent reads leave the verdict to the caller (the loader agrees over the world)
      data::collectively(grid.spatialComm(), [&] {
        readOne(grid, scratch(c.file), spec, GhostWidths::uniform(1), mode);
      });
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SampleFormats, EachUnreadableFileGivesItsOneLineMessageOnEveryRank) {
  const std::vector<BadCase> cases = writeBadFormatFiles();
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    for (const BadCase& c : cases)
      for (ReadMode mode : {ReadMode::Collective, ReadMode::Independent}) {
        const std::string m = readError(grid, c, mode);
        const bool ok = m.find(scratch(c.file)) != std::string::npos &&
                        m.find(c.problem) != std::string::npos && m.find('\n') == std::string::npos;
        EXPECT_TRUE(ok) << c.file << ": message '" << m << "'";
        EXPECT_TRUE(allTrue(ok, grid.worldComm())) << c.file;
      }
  });
}

// --- The layout rule alone -----------------------------------------------------------------

std::string layoutError(const std::vector<Index>& shape, LayoutChoice deck,
                        const std::string& attribute) {
  try {
    data::isChannelsLast("f", shape, 4, {4, 4, 4}, deck, attribute);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(InputLayout, AShapeThatReadsBothWaysNeedsTheDeckOrTheAttribute) {
  const std::vector<Index> cube{4, 4, 4, 4};
  EXPECT_NE(layoutError(cube, LayoutChoice::Auto, "").find("set the deck's 'Data/layout'"),
            std::string::npos);
  EXPECT_TRUE(data::isChannelsLast("f", cube, 4, {4, 4, 4}, LayoutChoice::DHWC, ""));
  EXPECT_FALSE(data::isChannelsLast("f", cube, 4, {4, 4, 4}, LayoutChoice::CDHW, ""));
  EXPECT_TRUE(data::isChannelsLast("f", cube, 4, {4, 4, 4}, LayoutChoice::Auto, "DHWC"));
  EXPECT_FALSE(data::isChannelsLast("f", cube, 4, {4, 4, 4}, LayoutChoice::Auto, "CDHW"));
  EXPECT_NE(layoutError(cube, LayoutChoice::Auto, "NDHWC").find("expected \"CDHW\" or \"DHWC\""),
            std::string::npos);
  EXPECT_NE(layoutError({4, 4, 4}, LayoutChoice::Auto, "").find("has rank 3"), std::string::npos);
}

TEST(InputLayout, TheShapeDecidesWhenOnlyOneLayoutFits) {
  EXPECT_TRUE(data::isChannelsLast("f", {8, 8, 8, 4}, 4, {8, 8, 8}, LayoutChoice::Auto, ""));
  EXPECT_FALSE(data::isChannelsLast("f", {4, 8, 8, 8}, 4, {8, 8, 8}, LayoutChoice::Auto, ""));
  EXPECT_EQ(data::parseLayoutChoice("DHWC"), LayoutChoice::DHWC);
  EXPECT_THROW(data::parseLayoutChoice("NCDHW"), Error);
}

// --- Dataset directories -------------------------------------------------------------------

TEST(SampleFormats, ADirectoryListsHdf5AndNumpySamplesButNotBothFormats) {
  const std::string h5 = scratch("dir_hdf5"), npy = scratch("dir_npy"), mixed = scratch("dir_mix");
  onRankZero([&] {
    for (const std::string& d : {h5, npy, mixed}) std::filesystem::create_directories(d);
    for (const std::string& f : {h5 + "/a.hdf5", h5 + "/b.h5", h5 + "/notes.txt",
                                 npy + "/u1.data.npy", npy + "/u1.label.npy", npy + "/u2.data.npy",
                                 npy + "/u2.label.npy", mixed + "/u.data.npy", mixed + "/v.hdf5"})
      std::ofstream(f) << "x";
  });
  EXPECT_EQ(data::Dataset::open(h5).files(),
            (std::vector<std::string>{h5 + "/a.hdf5", h5 + "/b.h5"}));
  EXPECT_EQ(data::Dataset::open(npy).files(),
            (std::vector<std::string>{npy + "/u1.data.npy", npy + "/u2.data.npy"}));
  try {
    data::Dataset::open(mixed);
    ADD_FAILURE() << "a directory of both formats was listed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(mixed + ": directory holds both HDF5 samples (1"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace hybrid3d::test
