#pragma once
/// \file
/// The four physical parameters of a synthetic cosmology sample, their ranges, and their
/// scaling to the training targets /unitPar in [-1, 1].
///
/// Which parameter shows where:
///  - amplitude: rms of the linear density field at the last channel, had the spectrum no
///    cutoff (so the cutoff removes small-scale power only). Every scale.
///  - slope: spectral index n of P(k) ~ k^n. The shape of the spectrum over all scales.
///  - cutoff: small-scale cutoff of P(k), as a fraction of the Nyquist wavenumber; P is damped by
///    exp(-(k/cutoff)^8). THIS IS THE SMALL-SCALE PARAMETER: for k below about half the cutoff
///    (below ~0.2 Nyquist) the damping is under 0.4 %, so a 4x-downsampled input keeps almost no
///    information about it, a 2x-downsampled one only part (the generator tests check that the
///    highest shells react to it far more than the lowest).
///  - growth: growth index gamma; channel c (scale factor a_c) sees the linear field times
///    a_c^gamma before the log-normal transform, so it sets how much more non-linear (clustered,
///    non-Gaussian) the late channels are than the early ones.

#include <array>
#include <cstdint>
#include <string>

namespace hybrid3d::generate {

struct CosmologyParameters {
  double amplitude = 0.9;
  double slope = -2.0;
  double cutoff = 0.65;
  double growth = 1.0;

  std::array<double, 4> values() const { return {amplitude, slope, cutoff, growth}; }
  static CosmologyParameters fromValues(const std::array<double, 4>& v) {
    return {v[0], v[1], v[2], v[3]};
  }
};

struct ParameterRange {
  const char* name;
  double lo;
  double hi;
};

/// The ranges the generator draws from; /unitPar maps [lo, hi] to [-1, 1].
inline const std::array<ParameterRange, 4>& cosmologyParameterRanges() {
  static const std::array<ParameterRange, 4> ranges{
      {{"amplitude", 0.6, 1.2}, {"slope", -2.6, -1.4}, {"cutoff", 0.4, 0.9}, {"growth", 0.5, 1.5}}};
  return ranges;
}

/// /unitPar of a sample: each parameter mapped linearly from its range to [-1, 1].
std::array<float, 4> toUnitParameters(const CosmologyParameters& p);

/// Each parameter drawn uniformly in its range, from (seed, sample) only.
CosmologyParameters drawCosmologyParameters(std::uint64_t seed, std::uint64_t sample);

/// Throws hybrid3d::Error naming `what` and the first parameter outside its range.
void checkCosmologyParameters(const CosmologyParameters& p, const std::string& what);

}  // namespace hybrid3d::generate
