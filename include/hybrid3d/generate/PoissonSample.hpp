#pragma once
/// \file
/// Poisson draws keyed by a counter-based stream: the draw for a voxel uses only the words
/// randomWord(key, 0), randomWord(key, 1), ... of that voxel's own key, so it is the same on
/// every rank count (see CounterHash.hpp).

#include <cstdint>

namespace hybrid3d::generate {

/// One Poisson(lambda) deviate from the stream `key` (lambda >= 0). Small means use inversion
/// of the cumulative distribution (one uniform); means from 10 up use Hoermann's transformed
/// rejection with squeeze (PTRS, 1993), which needs about 1.1 pairs of uniforms whatever the
/// mean, so dense voxels cost no more than empty ones.
std::int64_t poissonDraw(double lambda, std::uint64_t key);

}  // namespace hybrid3d::generate
