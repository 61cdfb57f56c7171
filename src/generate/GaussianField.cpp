#include <hybrid3d/generate/CounterHash.hpp>
#include <hybrid3d/generate/GaussianField.hpp>
#include <hybrid3d/generate/PowerSpectrum.hpp>
#include <hybrid3d/generate/SlabFft.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include <Kokkos_Core.hpp>

namespace hybrid3d::generate {

namespace {

using HostExec = Kokkos::DefaultHostExecutionSpace;

// White noise N(0,1) per voxel, keyed by the global voxel index (d*S + h)*S + w.
void fillWhiteNoise(SlabFft& fft, std::uint64_t key) {
  const Index S = fft.size(), first = fft.realFirst(), W = fft.paddedWidth();
  double* x = fft.real();
  Kokkos::parallel_for(
      "hybrid3d::generate::whiteNoise",
      Kokkos::MDRangePolicy<HostExec, Kokkos::Rank<2>>(HostExec(), {0, 0}, {fft.realPlanes(), S}),
      [=](Index d, Index h) {
        const std::uint64_t row = static_cast<std::uint64_t>(((first + d) * S + h) * S);
        double* out = x + (d * S + h) * W;
        for (Index w = 0; w < S; ++w) out[w] = standardNormal(key, row + w);
      });
}

}  // namespace

double gaussianRandomField(SlabFft& fft, const CosmologyParameters& p, std::uint64_t noiseKey) {
  const Index S = fft.size();
  fillWhiteNoise(fft, noiseKey);
  fft.forward();

  // Every mode's |m|^2 is an integer: look P up in a table (same on every rank). `bare` is the
  // spectrum without its cutoff, which fixes the normalisation.
  const std::vector<double> shape = spectrumShapeTable(p, S);
  CosmologyParameters noCutoff = p;
  noCutoff.cutoff = std::numeric_limits<double>::infinity();
  const std::vector<double> bare = spectrumShapeTable(noCutoff, S);

  // Normalisation. With white noise of unit variance, E|W(m)|^2 = N = S^3; after multiplying
  // by T(m) and the unnormalised backward transform divided by N, the variance of the field is
  // sum_m T(m)^2 / N. We take T(m)^2 = amplitude^2 * N * shape(m) / F0 with F0 = sum_m bare(m)
  // over the full grid: amplitude is the rms the field would have WITHOUT the cutoff, so the
  // cutoff removes small-scale power and leaves the large scales alone (normalising the actual
  // variance instead would let the cutoff rescale every scale). The field's variance is then
  // amplitude^2 * F / F0. The sums run plane by plane in a fixed order (sumOverPlanes) so that
  // they have the same bits on every rank count.
  const Index n = fft.modePlanes(), first = fft.modeFirst(), Wm = fft.modeWidth();
  std::vector<double> planeSums(2 * static_cast<std::size_t>(n), 0.0);
  {
    double* sums = planeSums.data();
    const double* shapeTable = shape.data();
    const double* bareTable = bare.data();
    const SlabFft* f = &fft;  // host kernels: plain pointers are fine
    // One plane per iteration, summed in the same order whoever owns it.
    Kokkos::parallel_for("hybrid3d::generate::spectrumPlaneSums",
                         Kokkos::RangePolicy<HostExec>(HostExec(), 0, n), [=](Index j) {
                           const Index mh = f->frequency(first + j);
                           double sum = 0.0, sumBare = 0.0;
                           for (Index kd = 0; kd < S; ++kd) {
                             const Index md = f->frequency(kd);
                             for (Index kw = 0; kw < Wm; ++kw) {
                               const double weight = f->hermitianWeight(kw);
                               const Index q = md * md + mh * mh + kw * kw;
                               sum += weight * shapeTable[q];
                               sumBare += weight * bareTable[q];
                             }
                           }
                           sums[j] = sum;
                           sums[n + j] = sumBare;
                         });
  }
  const double F = sumOverPlanes(fft.comm(), {planeSums.begin(), planeSums.begin() + n}, S);
  const double F0 = sumOverPlanes(fft.comm(), {planeSums.begin() + n, planeSums.end()}, S);
  const double N = static_cast<double>(S) * S * S;
  // Multiplier of a mode, including the 1/N of the backward transform:
  // T(m) / N = amplitude * sqrt(shape(m) / (N F0)).
  const double scale = p.amplitude / std::sqrt(N * F0);
  std::vector<double> multiplier(shape.size());
  for (std::size_t q = 0; q < shape.size(); ++q) multiplier[q] = scale * std::sqrt(shape[q]);

  fftw_complex* X = fft.modes();
  const double* table = multiplier.data();
  const SlabFft* f = &fft;
  Kokkos::parallel_for(
      "hybrid3d::generate::applySpectrum",
      Kokkos::MDRangePolicy<HostExec, Kokkos::Rank<2>>(HostExec(), {0, 0}, {fft.modePlanes(), S}),
      [=](Index j, Index kd) {
        const Index mh = f->frequency(first + j), md = f->frequency(kd);
        fftw_complex* row = X + (j * S + kd) * Wm;
        for (Index kw = 0; kw < Wm; ++kw) {
          const double t = table[md * md + mh * mh + kw * kw];
          row[kw][0] *= t;
          row[kw][1] *= t;
        }
      });
  fft.backward();
  return p.amplitude * p.amplitude * F / F0;
}

}  // namespace hybrid3d::generate
