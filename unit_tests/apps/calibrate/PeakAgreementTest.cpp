// How calibrate agrees on the FMA peak, on fake timings: each rank's best run, the highest best
// over the ranks (one rank busy throughout does not lower the file's peak), the spread reported
// beyond 20 %; a --base file whose peak differs by more than 20 % is named in a warning, one
// within 20 % is not; an efficiency above 1 is clamped with a warning, never silently. And the
// 16-bit rates of a CPU without 16-bit arithmetic are its float rate, said so.
#include <gtest/gtest.h>

#include <hybrid3d/core/FmaPeak.hpp>

#include "PeakAgreement.hpp"
#include "WorldRank.hpp"

namespace hybrid3d::test {
namespace {

using namespace hybrid3d::app::calibrate;

TEST(PeakAgreement, TheHighestBestOverTheRanks) {
  const int r = worldRank(), n = worldSize();
  // Rank r: its best run 100 - 10 r, among slower ones (a disturbed run, a cold start); the
  // last rank made one run fewer.
  std::vector<double> runs{60.0 - r, 100.0 - 10 * r, 90.0 - 10 * r, 55.0};
  if (n > 1 && r == n - 1) runs.pop_back();
  const AgreedPeak a = agreePeak(MPI_COMM_WORLD, runs);
  EXPECT_EQ(a.gflops, 100.0);  // rank 0's best
  EXPECT_EQ(a.lowest, 100.0 - 10 * (n - 1));
  EXPECT_EQ(a.ranks, n);
  EXPECT_EQ(a.runs, n > 1 ? 3 : 4);
  EXPECT_EQ(a.worstRun, 55.0);  // rank 0 keeps its slowest run
  EXPECT_NEAR(a.spread(), 0.1 * (n - 1), 1e-12);
  const std::string text = describePeak(a);
  EXPECT_NE(text.find("best of " + std::to_string(a.runs) + " timed runs on each of " +
                      std::to_string(n) + " rank(s)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("MPI_MAX"), std::string::npos) << text;
  EXPECT_EQ(spreadWarning(a), "");  // 10 % apart at most on 2 ranks
}

TEST(PeakAgreement, ARankFarBelowTheOthersIsReported) {
  // The two figures as the bests of two ranks: 122.1 against 235.8.
  const double best = worldRank() == 0 ? 235.8 : 122.1;
  const AgreedPeak a = agreePeak(MPI_COMM_WORLD, {best, 0.9 * best});
  EXPECT_EQ(a.gflops, 235.8);
  if (worldSize() == 1) {
    EXPECT_EQ(spreadWarning(a), "");
    return;
  }
  EXPECT_NEAR(a.spread(), (235.8 - 122.1) / 235.8, 1e-12);
  const std::string w = spreadWarning(a);
  EXPECT_NE(w.find("48.2 % apart (122.1 to 235.8 GFLOP/s)"), std::string::npos) << w;
}

TEST(PeakAgreement, ABasePeakMoreThanTwentyPercentAwayIsNamed) {
  const std::string file = "runs/old-machine.xml";
  EXPECT_EQ(baseDifferenceWarning(file, 100, 119.9), "");
  EXPECT_EQ(baseDifferenceWarning(file, 100, 80.1), "");
  EXPECT_EQ(baseDifferenceWarning(file, 0, 50), "");  // no base peak
  const std::string low = baseDifferenceWarning(file, 235.8, 122.1);
  EXPECT_NE(low.find("122.1 GFLOP/s per rank, differs by -48.2 % from the 235.8 of --base "
                     "runs/old-machine.xml (more than 20 %)"),
            std::string::npos)
      << low;
  EXPECT_NE(baseDifferenceWarning(file, 100, 120.5).find("+20.5 %"), std::string::npos);
}

TEST(PeakAgreement, AClampedEfficiencyIsReported) {
  EXPECT_EQ(fileEfficiency(0.75).value, 0.75);
  EXPECT_EQ(fileEfficiency(0.75).warning, "");
  EXPECT_EQ(fileEfficiency(1.0).warning, "");
  const FileEfficiency e = fileEfficiency(1.93);
  EXPECT_EQ(e.value, 1.0);
  EXPECT_NE(e.warning.find("1.930 of the peak measured, above 1"), std::string::npos) << e.warning;
  EXPECT_NE(e.warning.find("clamp"), std::string::npos) << e.warning;
}

// Short runs: the loops' results are not checked here (the machine decides them), only what
// the 16-bit rates fall back to and that every run is kept.
TEST(FmaPeak, SixteenBitRatesAreTheFloatRateWithout16BitArithmetic) {
  const FmaPeak fp32 = measureFmaPeak(3, 0.005);
#if defined(__x86_64__)
  ASSERT_EQ(fp32.runs.size(), 3u);
  EXPECT_GT(fp32.gflops, 0);
  EXPECT_EQ(fp32.gflops, *std::max_element(fp32.runs.begin(), fp32.runs.end()));
#endif
  const Cpu16BitFeatures f = cpu16BitFeatures();
  const Peak16 bf16 = measureBf16Peak(fp32, 3, 0.005), half = measureHalfPeak(fp32, 3, 0.005);
  if (!f.avx512bf16) {
    EXPECT_FALSE(bf16.native);
    EXPECT_EQ(bf16.peak.gflops, fp32.gflops);
    EXPECT_NE(bf16.how.find("bfloat16 convolutions compute in float"), std::string::npos);
  } else {
    EXPECT_TRUE(bf16.native);
    EXPECT_EQ(bf16.peak.runs.size(), 3u);
  }
  if (!f.avx512fp16) {
    EXPECT_FALSE(half.native);
    EXPECT_EQ(half.peak.gflops, fp32.gflops);
    EXPECT_NE(half.how.find("half convolutions compute in float"), std::string::npos);
  }
}

}  // namespace
}  // namespace hybrid3d::test
