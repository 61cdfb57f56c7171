// The timing cache auto chooses convolution code by (engines/ConvTimings.hpp): rows come back
// as written; a file of another CPU, of other library versions, or one that does not parse is
// ignored with one line and never trusted; writers merge their rows; a file that cannot be
// written costs a line, not the run. And which candidate counts as the fastest.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <hybrid3d/engines/ConvTimings.hpp>

namespace hybrid3d::test {
namespace {

namespace fs = std::filesystem;

// A fresh directory of this rank's own (the test runs at several rank counts at once), removed
// with its files at the end of the test.
struct ScratchDirectory {
  std::string path;
  explicit ScratchDirectory(const std::string& name) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    path = (fs::temp_directory_path() / ("hybrid3d_conv_timings_" + name + "_" +
                                         std::to_string(::getpid()) + "_" + std::to_string(rank)))
               .string();
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

ConvTimes someTimes(double scale) {
  ConvTimes t = noConvTimes();
  t[int(ConvPass::Forward)][int(ConvCandidate::Kokkos)] = 1.5e-3 * scale;
  t[int(ConvPass::Forward)][int(ConvCandidate::OneDnn)] = 0.25e-3 * scale;
  t[int(ConvPass::BackwardData)][int(ConvCandidate::Kokkos)] = 2e-3 * scale;
  t[int(ConvPass::BackwardWeights)][int(ConvCandidate::Direct)] = 7.45e-3 * scale;
  return t;
}

void expectSameTimes(const ConvTimes& got, const ConvTimes& want) {
  for (int p = 0; p < convPassCount; ++p)
    for (int c = 0; c < convCandidateCount; ++c) {
      if (std::isfinite(want[p][c]))
        EXPECT_NEAR(got[p][c], want[p][c], 1e-5 * want[p][c]) << p << " " << c;
      else
        EXPECT_FALSE(std::isfinite(got[p][c])) << p << " " << c;
    }
}

const std::string cpu = "Test CPU 9000; avx2 fma";
const std::string versions = "onednn 2.6.0 kokkos 30401 hybrid3d 0.1.0";

TEST(ConvTimings, RowsComeBackAsWritten) {
  const ScratchDirectory dir("round");
  const std::string path = dir.path + "/sub/conv-timings.txt";
  {
    ConvTimingCache cache(path, cpu, versions);
    EXPECT_FALSE(cache.find("a").has_value());
    cache.record("a", someTimes(1));
    EXPECT_EQ(cache.takeNote(), "");
  }
  ConvTimingCache again(path, cpu, versions);
  EXPECT_EQ(again.takeNote(), "");
  ASSERT_TRUE(again.find("a").has_value());
  expectSameTimes(*again.find("a"), someTimes(1));
  EXPECT_FALSE(again.find("b").has_value());
}

TEST(ConvTimings, AnotherCpusOrOtherVersionsFileIsIgnoredWithALine) {
  const ScratchDirectory dir("foreign");
  const std::string path = dir.path + "/conv-timings.txt";
  ConvTimingCache(path, cpu, versions).record("a", someTimes(1));
  ConvTimingCache otherCpu(path, "Other CPU; avx2 avx512f fma", versions);
  EXPECT_FALSE(otherCpu.find("a").has_value());
  const std::string note = otherCpu.takeNote();
  EXPECT_NE(note.find(path + " ignored: written on another CPU (Test CPU 9000; avx2 fma)"),
            std::string::npos)
      << note;
  EXPECT_EQ(otherCpu.takeNote(), "");  // once
  ConvTimingCache otherVersions(path, cpu, "onednn 3.1.0 kokkos 30401 hybrid3d 0.1.0");
  EXPECT_FALSE(otherVersions.find("a").has_value());
  EXPECT_NE(otherVersions.takeNote().find("written by other library versions (" + versions + ")"),
            std::string::npos);
  // The foreign file is replaced by this machine's rows, not merged with them.
  otherVersions.record("b", someTimes(2));
  ConvTimingCache reread(path, cpu, "onednn 3.1.0 kokkos 30401 hybrid3d 0.1.0");
  EXPECT_FALSE(reread.find("a").has_value());
  EXPECT_TRUE(reread.find("b").has_value());
}

TEST(ConvTimings, CorruptFilesAreIgnoredWithALine) {
  const ScratchDirectory scratch("corrupt");
  const std::string& dir = scratch.path;
  const std::string good = "hybrid3d convolution timings 1\ncpu " + cpu + "\nversions " + versions +
                           "\nkey 1 - - - 2 - - - 3 - - -\n";
  const std::vector<std::pair<std::string, std::string>> files{
      {"", "not a timings file"},
      {"garbage\n", "not a timings file"},
      {good + "key2 1 2\n", "line 5 is not a timing row (corrupt)"},
      {good + "key3 1 x - - 2 - - - 3 - - -\n", "line 5 is not a timing row (corrupt)"},
      {good + "key4 1 -1 - - 2 - - - 3 - - -\n", "line 5 is not a timing row (corrupt)"},
      {good + "key5 1 - - - 2 - - - 3 - - - 4\n", "line 5 is not a timing row (corrupt)"},
      {"hybrid3d convolution timings 1\nversions x\n", "no cpu line"},
  };
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string path = dir + "/file" + std::to_string(i);
    std::ofstream(path) << files[i].first;
    ConvTimingCache cache(path, cpu, versions);
    EXPECT_FALSE(cache.find("key").has_value()) << i;
    const std::string note = cache.takeNote();
    EXPECT_NE(note.find(path + " ignored: " + files[i].second), std::string::npos)
        << i << ": " << note;
  }
  // The good part alone is read.
  std::ofstream(dir + "/good") << good;
  ConvTimingCache cache(dir + "/good", cpu, versions);
  EXPECT_EQ(cache.takeNote(), "");
  ASSERT_TRUE(cache.find("key").has_value());
  EXPECT_EQ((*cache.find("key"))[int(ConvPass::BackwardData)][0], 2.0);
}

TEST(ConvTimings, WritersMergeTheirRows) {
  // Two jobs that read the file before either wrote: each one's row survives the other's write.
  const ScratchDirectory dir("merge");
  const std::string path = dir.path + "/conv-timings.txt";
  ConvTimingCache first(path, cpu, versions), second(path, cpu, versions);
  expectSameTimes(first.record("a", someTimes(1)), someTimes(1));
  expectSameTimes(second.record("b", someTimes(2)), someTimes(2));
  // The first row written for a shape stays: who measured it too takes that row.
  expectSameTimes(second.record("a", someTimes(3)), someTimes(1));
  expectSameTimes(*second.find("a"), someTimes(1));
  // Unless it timed other candidates (another build's): then the new row replaces it.
  ConvTimes fewer = someTimes(4);
  fewer[int(ConvPass::Forward)][int(ConvCandidate::OneDnn)] = notCandidate;
  expectSameTimes(second.record("a", fewer), fewer);
  expectSameTimes(*ConvTimingCache(path, cpu, versions).find("a"), fewer);
  ConvTimingCache both(path, cpu, versions);
  ASSERT_TRUE(both.find("a").has_value());
  ASSERT_TRUE(both.find("b").has_value());
  expectSameTimes(*both.find("b"), someTimes(2));
  // No temporary file is left behind.
  int files = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(path).parent_path()))
    files += entry.path().filename().string().find(".tmp.") == std::string::npos ? 1 : 100;
  EXPECT_EQ(files, 2);  // the file and its lock
}

TEST(ConvTimings, AFileThatCannotBeWrittenCostsALine) {
  const ScratchDirectory scratch("unwritable");
  const std::string& dir = scratch.path;
  std::ofstream(dir + "/plain") << "a file, not a directory";
  ConvTimingCache cache(dir + "/plain/conv-timings.txt", cpu, versions);
  EXPECT_NO_THROW(cache.record("a", someTimes(1)));
  EXPECT_NE(cache.takeNote().find("cannot write"), std::string::npos);
  EXPECT_TRUE(cache.find("a").has_value());  // kept for this process
}

TEST(ConvTimings, TheFastestIsTheLeastFiniteTime) {
  std::array<double, convCandidateCount> t{notCandidate, 3.0, 2.0, notCandidate};
  EXPECT_EQ(fastestCandidate(t), ConvCandidate::OneDnn);
  t = {2.0, 2.0, 3.0, notCandidate};  // a tie: the first
  EXPECT_EQ(fastestCandidate(t), ConvCandidate::Kokkos);
  t = {notCandidate, notCandidate, notCandidate, notCandidate};
  EXPECT_EQ(fastestCandidate(t), ConvCandidate::Kokkos);
}

TEST(ConvTimings, ShapeKeysNameWhatTheTimeDependsOn) {
  ConvShape a;
  a.batch = 2;
  a.cin = 4;
  a.cout = 16;
  a.inLocal = {18, 18, 10};
  a.out = {16, 16, 8};
  a.kernel = 3;
  a.padding = 1;
  a.ghostsLo = {1, 1, 1};
  a.ghostsHi = {1, 1, 1};
  EXPECT_EQ(a.key(), "n2:c4>16:in18x18x10:out16x16x8:k3s1p1:g1,1,1/1,1,1:float:threads1");
  ConvShape b = a;
  b.precision = Precision::BFloat16;
  EXPECT_NE(a.key(), b.key());
  b = a;
  b.ghostsHi = {1, 1, 0};
  EXPECT_NE(a.key(), b.key());
  EXPECT_EQ(a.key().find(' '), std::string::npos);
}

TEST(ConvTimings, TheCpuLineNamesTheModelAndItsFlags) {
  const std::string line = convTimingCpu();
  EXPECT_NE(line.find("; "), std::string::npos) << line;
  EXPECT_NE(convTimingVersions().find("kokkos "), std::string::npos);
}

}  // namespace
}  // namespace hybrid3d::test
