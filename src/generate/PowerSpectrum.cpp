#include <hybrid3d/generate/PowerSpectrum.hpp>
#include <hybrid3d/generate/SlabFft.hpp>

#include <cmath>

namespace hybrid3d::generate {

double spectrumShape(const CosmologyParameters& p, double k) {
  if (k <= 0.0) return 0.0;
  const double x = k / p.cutoff;
  const double x2 = x * x, x4 = x2 * x2;
  return std::pow(k, p.slope) * std::exp(-x4 * x4);
}

std::vector<double> spectrumShapeTable(const CosmologyParameters& p, Index size) {
  const Index half = size / 2;
  const Index maxQ = 3 * half * half;
  std::vector<double> table(static_cast<std::size_t>(maxQ + 1));
  const double nyquist = 0.5 * static_cast<double>(size);
  for (Index q = 0; q <= maxQ; ++q)
    table[q] = spectrumShape(p, std::sqrt(static_cast<double>(q)) / nyquist);
  return table;
}

std::vector<ShellPower> measurePowerSpectrum(SlabFft& fft) {
  fft.forward();
  const Index S = fft.size();
  const Index shells = S / 2 + 1;
  // Per shell: sum of weights (modes), of weight*|m|, of weight*|X|^2.
  std::vector<double> sums(3 * shells, 0.0);
  const fftw_complex* X = fft.modes();
  for (Index j = 0; j < fft.modePlanes(); ++j) {
    const Index mh = fft.frequency(fft.modeFirst() + j);
    for (Index kd = 0; kd < S; ++kd) {
      const Index md = fft.frequency(kd);
      for (Index kw = 0; kw < fft.modeWidth(); ++kw) {
        const double m = std::sqrt(static_cast<double>(md * md + mh * mh + kw * kw));
        const Index shell = static_cast<Index>(std::lround(m));
        if (shell >= shells) continue;  // corners beyond the Nyquist sphere
        const double weight = fft.hermitianWeight(kw);
        const fftw_complex& x = X[fft.modeOffset(j, kd, kw)];
        sums[3 * shell] += weight;
        sums[3 * shell + 1] += weight * m;
        sums[3 * shell + 2] += weight * (x[0] * x[0] + x[1] * x[1]);
      }
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, sums.data(), static_cast<int>(sums.size()), MPI_DOUBLE, MPI_SUM,
                fft.comm());
  const double voxels = static_cast<double>(S) * S * S;
  std::vector<ShellPower> out(static_cast<std::size_t>(shells));
  for (Index s = 0; s < shells; ++s) {
    const double n = sums[3 * s];
    if (n == 0) continue;
    out[s].modes = n;
    out[s].k = sums[3 * s + 1] / n / (0.5 * static_cast<double>(S));
    out[s].power = sums[3 * s + 2] / n / voxels;
  }
  return out;
}

}  // namespace hybrid3d::generate
