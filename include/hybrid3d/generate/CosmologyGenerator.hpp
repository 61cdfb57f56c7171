#pragma once
/// \file
/// Synthetic CosmoFlow-like samples: per sample a Gaussian random density field in a periodic
/// S^3 box (GaussianField.hpp), scaled by a growth factor for each of four "redshift" channels,
/// made non-Gaussian by a log-normal transform, and Poisson-sampled into int16 particle counts.
///
/// File (docs/design.md section 7): /full [4, S, S, S] int16 counts (channels z = 3, 2, 1, 0),
/// /unitPar [4] float32 = the parameters of CosmologyParameters.hpp scaled to [-1, 1]; root
/// attributes record the generator, seed, sample number and the physical parameters.
///
/// Parallel: FFTW-MPI slabs of D-planes, each rank writes its own planes (SampleWriter).
/// Deterministic: every random number is keyed by (seed, sample, global voxel), so 1 and N
/// ranks write bit-identical files.

#include <array>
#include <cstdint>
#include <string>

#include <mpi.h>

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/generate/CosmologyParameters.hpp>

namespace hybrid3d::generate {

class SlabFft;

/// Dataset-wide settings of the cosmology generator.
struct CosmologySpec {
  Index size = 128;        // S: the box is S^3 voxels
  double meanCount = 8.0;  // mean particle count per voxel (sets the shot noise)
};

/// Scale factors a = 1/(1+z) of the four channels, z = 3, 2, 1, 0. Channel c sees the linear
/// field times a_c^growth: early channels are nearly Gaussian, late ones strongly clustered.
inline constexpr std::array<double, 4> kCosmologyScaleFactors{0.25, 1.0 / 3.0, 0.5, 1.0};

/// Stages 2 and 3, given the linear field delta of gaussianRandomField() in fft.real() and its
/// expected variance: for each channel c the log-normal density
/// rho = exp(D delta - D^2 variance / 2) (mean 1, with D = a_c^growth) and a Poisson draw of
/// mean meanCount * rho per voxel, clamped to int16. Writes this rank's planes to
/// counts[((c * planes + d) * S + h) * S + w].
void cosmologyCounts(const SlabFft& fft, const CosmologyParameters& p, double variance,
                     double meanCount, std::uint64_t poissonKey, std::int16_t* counts);

/// Generates sample `sample` of the dataset `seed` with parameters p and writes it to `path`
/// (atomically), collectively over `comm`.
void writeCosmologySample(MPI_Comm comm, const CosmologySpec& spec, const CosmologyParameters& p,
                          std::uint64_t seed, std::uint64_t sample, const std::string& path);

}  // namespace hybrid3d::generate
