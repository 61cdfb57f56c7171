#pragma once
/// \file
/// Synthetic 3D segmentation samples (LiTS-like): an organ-like smooth blob (an ellipsoid,
/// rotated and deformed by low-frequency noise), a few small lesions inside it, an intensity
/// per class with soft (partial-volume) edges, a smooth multiplicative bias field and Gaussian
/// noise.
///
/// File (docs/design.md section 7): /volume [1, S, S, S] float32 intensities; /segmentation [S, S,
/// S] uint8 labels 0 = background, 1 = organ, 2 = lesion (uint8: a 512^3 label volume is 128 MiB
/// instead of 512 MiB as int32; HDF5 converts on read to whatever integer type the reader asks).
///
/// The scene is analytic: a handful of numbers drawn from (seed, sample) that every rank
/// computes identically, evaluated at each voxel centre. So no communication is needed, any
/// slab decomposition works, and the image noise is keyed by global voxel: 1 and N ranks write
/// bit-identical files.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::generate {

/// Ranges of the scene's random choices (recorded in the manifest).
inline constexpr int kMinLesions = 1, kMaxLesions = 4;
inline constexpr double kOrganRadiusLo = 0.2, kOrganRadiusHi = 0.3;  // per axis, unit cube

struct SegmentationSpec {
  Index size = 128;  // S: the volume is S^3 voxels
};

/// A smooth random function of position (a sum of a few low-frequency periodic waves),
/// bounded by 1 in absolute value. Positions are in the unit cube.
struct SmoothNoise {
  static constexpr int kWaves = 6;
  std::array<std::array<double, 3>, kWaves> frequency{};  // integer wave vectors, cycles per box
  std::array<double, kWaves> phase{};
  std::array<double, kWaves> weight{};  // sum of |weight| = 1
  double operator()(const std::array<double, 3>& x) const;
  /// Random waves with integer frequencies in [-maxFrequency, maxFrequency] (not all zero).
  static SmoothNoise draw(std::uint64_t key, std::uint64_t firstCounter, int maxFrequency);
};

struct Lesion {
  std::array<double, 3> center{};  // at a voxel centre inside the organ (so never empty)
  std::array<double, 3> radii{};
};

/// Everything random about one segmentation sample except the per-voxel image noise.
struct SegmentationScene {
  Index size = 0;
  std::array<double, 3> organCenter{};
  std::array<double, 3> organRadii{};
  std::array<std::array<double, 3>, 3> organRotation{};  // rows: the organ's axes
  double organDeformation = 0.25;  // amplitude of the noise added to the ellipsoid's level
  SmoothNoise organNoise;
  std::vector<Lesion> lesions;
  SmoothNoise biasNoise;
  double biasStrength = 0.15;  // multiplicative bias field 1 + strength * noise
  std::array<double, 3> classIntensity{0.2, 0.6, 0.35};  // background, organ, lesion
  double noiseSigma = 0.05;

  /// Position of the centre of voxel i along an axis, in the unit cube.
  double coordinate(Index i) const { return (static_cast<double>(i) + 0.5) / size; }
  /// Level functions: negative inside, 0 on the surface, in units of the relative radius.
  double organLevel(const std::array<double, 3>& x) const;
  double lesionLevel(const Lesion& l, const std::array<double, 3>& x) const;
  /// Label 0, 1 or 2 of a position: lesions count only inside the organ.
  int label(const std::array<double, 3>& x) const;
  /// Noise-free intensity: class intensities blended across soft edges, times the bias field.
  double intensity(const std::array<double, 3>& x) const;
};

/// The scene of sample `sample` of dataset `seed` for an S^3 volume (same on every rank).
SegmentationScene drawSegmentationScene(Index size, std::uint64_t seed, std::uint64_t sample);

/// Generates the sample and writes it to `path` (atomically), collectively over `comm`; each
/// rank computes and writes a slab of D-planes (block decomposition, first ranks one more).
void writeSegmentationSample(MPI_Comm comm, const SegmentationSpec& spec, std::uint64_t seed,
                             std::uint64_t sample, const std::string& path);

}  // namespace hybrid3d::generate
