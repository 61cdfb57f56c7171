#pragma once
/// \file
/// Stage 1 of the cosmology generator, exposed so that tests can measure it: the linear
/// Gaussian density field of one sample.
///
/// Real-space white noise keyed by the global voxel index is transformed, each mode is
/// multiplied by sqrt(P(k)), and the result is transformed back. Starting from real white noise
/// makes the modes Hermitian by construction, and keying the noise by voxel (not drawing it from
/// a sequential generator) makes the field independent of the number of ranks.

#include <cstdint>

#include <hybrid3d/generate/CosmologyParameters.hpp>

namespace hybrid3d::generate {

class SlabFft;

/// Fills fft.real() (this rank's D-planes) with a periodic Gaussian field of zero mean and power
/// spectrum proportional to spectrumShape(p, k), drawn from the stream `noiseKey`, normalised so
/// that without the cutoff its variance would be p.amplitude^2. Returns the expected variance
/// of the field (with the cutoff), the same on every rank. Collective over fft.comm().
double gaussianRandomField(SlabFft& fft, const CosmologyParameters& p, std::uint64_t noiseKey);

}  // namespace hybrid3d::generate
