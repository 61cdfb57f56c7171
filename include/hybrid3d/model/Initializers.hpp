#pragma once
/// \file
/// Seeded parameter initialisers. Every rank draws the same global tensor and keeps its own part
/// (the whole unless the parameter is a column shard): the stream of each parameter is seeded
/// from (run seed, layer name, parameter name) and filled on the host, independent of the
/// process grid and of the order layers are built.

#include <cstdint>
#include <string>

#include <hybrid3d/layers/Parameter.hpp>

namespace hybrid3d {

/// PyTorch's fans: fan_in = shape[1] * receptive field, fan_out = shape[0] * receptive field.
struct Fans {
  double in = 1, out = 1;
};
Fans fansOf(const std::vector<Index>& shape);

enum class Init { GlorotUniform, HeNormal, Constant };

/// Fills p.value: Glorot (Xavier) uniform U(-a, a), a = sqrt(6 / (fan_in + fan_out)); He
/// (Kaiming) normal N(0, 2 / fan_in); or the constant `value`.
template <class T, class M>
void initialize(const Parameter<T, M>& p, Init kind, std::uint64_t seed, const std::string& layer,
                double value = 0.0);

}  // namespace hybrid3d
