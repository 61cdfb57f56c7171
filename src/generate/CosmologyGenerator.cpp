#include <hybrid3d/generate/CosmologyGenerator.hpp>
#include <hybrid3d/generate/CounterHash.hpp>
#include <hybrid3d/generate/GaussianField.hpp>
#include <hybrid3d/generate/PoissonSample.hpp>
#include <hybrid3d/generate/SampleWriter.hpp>
#include <hybrid3d/generate/SlabFft.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include <Kokkos_Core.hpp>

namespace hybrid3d::generate {

void cosmologyCounts(const SlabFft& fft, const CosmologyParameters& p, double variance,
                     double meanCount, std::uint64_t poissonKey, std::int16_t* counts) {
  using HostExec = Kokkos::DefaultHostExecutionSpace;
  const Index S = fft.size(), planes = fft.realPlanes(), first = fft.realFirst();
  const Index W = fft.paddedWidth();
  const double* delta = fft.real();
  for (int c = 0; c < 4; ++c) {
    const double D = std::pow(kCosmologyScaleFactors[c], p.growth);
    // exp(D delta - D^2 var / 2) has mean 1 when delta ~ N(0, var).
    const double shift = -0.5 * D * D * variance;
    std::int16_t* out = counts + c * planes * S * S;
    Kokkos::parallel_for(
        "hybrid3d::generate::poissonCounts",
        Kokkos::MDRangePolicy<HostExec, Kokkos::Rank<2>>(HostExec(), {0, 0}, {planes, S}),
        [=](Index d, Index h) {
          const double* in = delta + (d * S + h) * W;
          std::int16_t* row = out + (d * S + h) * S;
          const std::uint64_t voxel0 =
              static_cast<std::uint64_t>(((c * S + first + d) * S + h) * S);
          for (Index w = 0; w < S; ++w) {
            const double lambda = meanCount * std::exp(D * in[w] + shift);
            const std::int64_t n = poissonDraw(lambda, deriveKey(poissonKey, voxel0 + w));
            constexpr std::int64_t most = std::numeric_limits<std::int16_t>::max();
            row[w] = static_cast<std::int16_t>(n < most ? n : most);
          }
        });
  }
}

void writeCosmologySample(MPI_Comm comm, const CosmologySpec& spec, const CosmologyParameters& p,
                          std::uint64_t seed, std::uint64_t sample, const std::string& path) {
  const Index S = spec.size;
  SlabFft fft(comm, S);
  const double variance = gaussianRandomField(fft, p, sampleKey(seed, sample, Stream::WhiteNoise));
  std::vector<std::int16_t> counts(static_cast<std::size_t>(4 * fft.realPlanes() * S * S));
  cosmologyCounts(fft, p, variance, spec.meanCount, sampleKey(seed, sample, Stream::Poisson),
                  counts.data());

  SampleWriter file(comm, path);
  file.writeSlab("full", {4, S, S, S}, 1, fft.realFirst(), fft.realPlanes(), counts.data());
  const std::array<float, 4> unit = toUnitParameters(p);
  file.writeWhole("unitPar", {4}, unit.data());
  file.attribute("generator", "hybrid3d generate cosmology");
  file.attribute("seed", std::to_string(seed));  // a string: seeds use all 64 bits
  file.attribute("sample", static_cast<double>(sample));
  file.attribute("mean_count", spec.meanCount);
  const auto values = p.values();
  for (int i = 0; i < 4; ++i) file.attribute(cosmologyParameterRanges()[i].name, values[i]);
  file.commit();
}

}  // namespace hybrid3d::generate
