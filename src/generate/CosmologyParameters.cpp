#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/generate/CosmologyParameters.hpp>
#include <hybrid3d/generate/CounterHash.hpp>

namespace hybrid3d::generate {

std::array<float, 4> toUnitParameters(const CosmologyParameters& p) {
  const auto v = p.values();
  std::array<float, 4> u{};
  for (int i = 0; i < 4; ++i) {
    const auto& r = cosmologyParameterRanges()[i];
    u[i] = static_cast<float>(2.0 * (v[i] - r.lo) / (r.hi - r.lo) - 1.0);
  }
  return u;
}

CosmologyParameters drawCosmologyParameters(std::uint64_t seed, std::uint64_t sample) {
  const std::uint64_t key = sampleKey(seed, sample, Stream::Parameters);
  std::array<double, 4> v{};
  for (int i = 0; i < 4; ++i) {
    const auto& r = cosmologyParameterRanges()[i];
    v[i] = r.lo + (r.hi - r.lo) * uniform01(key, static_cast<std::uint64_t>(i));
  }
  return CosmologyParameters::fromValues(v);
}

void checkCosmologyParameters(const CosmologyParameters& p, const std::string& what) {
  const auto v = p.values();
  for (int i = 0; i < 4; ++i) {
    const auto& r = cosmologyParameterRanges()[i];
    if (!(v[i] >= r.lo && v[i] <= r.hi))
      fail(what, ": ", r.name, " = ", v[i], " is outside [", r.lo, ", ", r.hi, "]");
  }
}

}  // namespace hybrid3d::generate
