// Stage 1 of the cosmology generator, the linear Gaussian field: its measured power spectrum
// has the requested slope, its cutoff acts at small scales only, and it is the same on every
// rank count.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>
#include <mpi.h>

#include <hybrid3d/generate/CounterHash.hpp>
#include <hybrid3d/generate/GaussianField.hpp>
#include <hybrid3d/generate/PowerSpectrum.hpp>
#include <hybrid3d/generate/SlabFft.hpp>

#include "GenerateTestUtils.hpp"

namespace {

using namespace hybrid3d;
using namespace hybrid3d::generate;

// The whole field on rank 0 of the FFT's communicator (padding dropped), [d][h][w].
std::vector<double> gatherField(const SlabFft& fft) {
  const Index S = fft.size();
  std::vector<double> mine;
  for (Index d = 0; d < fft.realPlanes(); ++d)
    for (Index h = 0; h < S; ++h)
      for (Index w = 0; w < S; ++w) mine.push_back(fft.real()[fft.realOffset(d, h, w)]);
  int ranks = 1, rank = 0;
  MPI_Comm_size(fft.comm(), &ranks);
  MPI_Comm_rank(fft.comm(), &rank);
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(ranks), displs(ranks);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, fft.comm());
  for (int r = 1; r < ranks; ++r) displs[r] = displs[r - 1] + counts[r - 1];
  std::vector<double> all(rank == 0 ? S * S * S : 0);
  MPI_Gatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE,
              0, fft.comm());
  return all;
}

// Least-squares slope of log(power) against log(k) over the shells with k in [kLo, kHi].
double fittedSlope(const std::vector<ShellPower>& shells, double kLo, double kHi) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const ShellPower& s : shells) {
    if (s.modes == 0 || s.k < kLo || s.k > kHi) continue;
    const double x = std::log(s.k), y = std::log(s.power);
    n += 1;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

TEST(GaussianField, PowerSpectrumHasTheRequestedSlope) {
  const Index S = 64;
  const int realizations = 6;
  SlabFft fft(MPI_COMM_WORLD, S);
  for (double slope : {-1.6, -2.4}) {
    SCOPED_TRACE("slope " + std::to_string(slope));
    CosmologyParameters p;
    p.amplitude = 1.0;
    p.slope = slope;
    p.cutoff = cosmologyParameterRanges()[2].hi;
    std::vector<ShellPower> mean;
    for (int r = 0; r < realizations; ++r) {
      gaussianRandomField(fft, p, sampleKey(11, r, Stream::WhiteNoise));
      const std::vector<ShellPower> shells = measurePowerSpectrum(fft);
      if (mean.empty())
        mean = shells;
      else
        for (std::size_t i = 0; i < shells.size(); ++i) mean[i].power += shells[i].power;
    }
    // Middle range: above the first few shells (few modes, shell-width bias) and below half the
    // cutoff, where exp(-(k/cutoff)^8) differs from 1 by under 0.4 %.
    const double fit = fittedSlope(mean, 0.1, 0.5 * p.cutoff);
    // Tolerance: about four standard deviations of the fit (0.02, seen over seeds) for 6
    // realizations of the 8 shells with |m| in 7..14.
    EXPECT_NEAR(fit, slope, 0.08);
  }
}

TEST(GaussianField, CutoffChangesSmallScalesFarMoreThanLargeScales) {
  // The cutoff is the parameter meant to show only at small scales: with the same white noise,
  // moving it across its range must change the power at the highest shells by orders of
  // magnitude more than at the lowest ones (which a downsampled input still sees).
  const Index S = 32;
  SlabFft fft(MPI_COMM_WORLD, S);
  CosmologyParameters p;
  p.amplitude = 1.0;
  p.slope = -2.0;
  std::vector<std::vector<ShellPower>> spectra;
  for (double cutoff : {cosmologyParameterRanges()[2].lo, cosmologyParameterRanges()[2].hi}) {
    p.cutoff = cutoff;
    gaussianRandomField(fft, p, sampleKey(5, 0, Stream::WhiteNoise));
    spectra.push_back(measurePowerSpectrum(fft));
  }
  double lowChange = 0, highChange = 1e300;
  for (std::size_t i = 1; i < spectra[0].size(); ++i) {
    const double change = std::fabs(std::log(spectra[0][i].power / spectra[1][i].power));
    if (spectra[0][i].k <= 0.2) lowChange = std::max(lowChange, change);
    if (spectra[0][i].k >= 0.6) highChange = std::min(highChange, change);
  }
  EXPECT_GT(highChange, 100 * lowChange) << "low-k change " << lowChange;
}

TEST(GaussianField, IdenticalOnOneRankAndOnAllRanks) {
  // Noise keyed by global voxel, plane sums in global order and FFTW_ESTIMATE plans: the field
  // has the same bits whatever the number of ranks.
  const Index S = 24;
  CosmologyParameters p;
  SlabFft all(MPI_COMM_WORLD, S);
  gaussianRandomField(all, p, sampleKey(3, 1, Stream::WhiteNoise));
  const std::vector<double> onAll = gatherField(all);
  test::FirstRanks one(1);
  if (one.inside()) {
    SlabFft single(one.comm(), S);
    gaussianRandomField(single, p, sampleKey(3, 1, Stream::WhiteNoise));
    const std::vector<double> onOne = gatherField(single);
    ASSERT_EQ(onOne.size(), onAll.size());
    Index differing = 0;
    for (std::size_t i = 0; i < onOne.size(); ++i) differing += onOne[i] != onAll[i];
    EXPECT_EQ(differing, 0);
  }
}

}  // namespace
