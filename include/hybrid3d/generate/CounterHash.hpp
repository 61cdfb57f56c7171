#pragma once
/// \file
/// Counter-based random numbers for the data generators: every random value is a pure function
/// of (key, counter), where the key names the seed, the sample and the purpose ("stream") and the
/// counter is a GLOBAL index (voxel, mode, draw number). No sequential RNG state exists, so a
/// value does not depend on which rank computes it, in which order, or how many ranks there are:
/// the same seed gives bit-identical samples on 1 or 1000 ranks.
///
/// The mixing function is SplitMix64's finaliser (Steele, Lea, Flood 2014); SplitMix64 used as a
/// counter generator, mix(key + (i + 1) * golden), passes BigCrush, which is more than synthetic
/// training data needs.

#include <cmath>
#include <cstdint>

namespace hybrid3d::generate {

/// SplitMix64's output mixing (a bijection of 64-bit words).
inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

inline constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

/// Derives a child key from a parent key and a label (sample number, stream id, channel, ...).
/// Chaining mix64 keeps (key, a) and (key', a') apart unless they are equal.
inline std::uint64_t deriveKey(std::uint64_t key, std::uint64_t label) {
  return mix64(mix64(key + kGolden) ^ (label * 0xD6E8FEB86659FD93ULL + kGolden));
}

/// The counter-th 64-bit random word of the stream `key`.
inline std::uint64_t randomWord(std::uint64_t key, std::uint64_t counter) {
  return mix64(key + (counter + 1) * kGolden);
}

/// Uniform in [0, 1) with 53 random bits.
inline double uniform01(std::uint64_t key, std::uint64_t counter) {
  return static_cast<double>(randomWord(key, counter) >> 11) * 0x1.0p-53;
}

/// Uniform in (0, 1]: safe under log().
inline double uniformOpen0(std::uint64_t key, std::uint64_t counter) {
  return static_cast<double>((randomWord(key, counter) >> 11) + 1) * 0x1.0p-53;
}

/// Standard normal deviate number `index` of stream `key`, by Box-Muller on the two words
/// 2*index and 2*index+1 (only the cosine branch: one normal per index keeps the map from
/// global index to value trivial).
inline double standardNormal(std::uint64_t key, std::uint64_t index) {
  const double u1 = uniformOpen0(key, 2 * index);
  const double u2 = uniform01(key, 2 * index + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586476925 * u2);
}

/// Streams (purposes) of the generators: one key per (seed, sample, stream).
enum class Stream : std::uint64_t {
  Parameters = 1,  // the sample's physical parameters
  WhiteNoise = 2,  // real-space white noise of the Gaussian field, by global voxel
  Poisson = 3,     // Poisson draws, by (channel, global voxel)
  Shapes = 4,      // segmentation: organ shape, lesion placement, bias field
  ImageNoise = 5,  // segmentation: Gaussian image noise, by global voxel
};

/// The key of one purpose of one sample of a dataset.
inline std::uint64_t sampleKey(std::uint64_t seed, std::uint64_t sample, Stream stream) {
  return deriveKey(deriveKey(seed, sample), static_cast<std::uint64_t>(stream));
}

}  // namespace hybrid3d::generate
