#include <cmath>
#include <random>

#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/layers/DistributedParameter.hpp>
#include <hybrid3d/model/Initializers.hpp>

namespace hybrid3d {

Fans fansOf(const std::vector<Index>& shape) {
  if (shape.empty()) return {};
  double receptive = 1;
  for (std::size_t i = 2; i < shape.size(); ++i) receptive *= double(shape[i]);
  Fans f;
  f.out = double(shape[0]) * receptive;
  f.in = shape.size() > 1 ? double(shape[1]) * receptive : double(shape[0]);
  return f;
}

namespace {

// FNV-1a over the names, mixed with the seed: a stream per parameter, same on every rank.
std::uint64_t streamSeed(std::uint64_t seed, const std::string& layer, const std::string& name) {
  std::uint64_t h = 1469598103934665603ull ^ seed;
  for (char c : layer + "/" + name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

template <class T, class M>
void initialize(const Parameter<T, M>& p, Init kind, std::uint64_t seed, const std::string& layer,
                double value) {
  // The global tensor is drawn on every rank and each keeps its own part: the values are the
  // 1-rank run's whatever the parameter's distribution.
  std::vector<T> h(std::size_t(globalSize(p.shape)));
  const Fans fans = fansOf(p.shape);
  std::mt19937_64 rng(streamSeed(seed, layer, p.name));
  // Draw with our own transforms of the raw 64-bit stream: the standard distributions are
  // implementation-defined, which would make weights differ between compilers.
  auto uniform01 = [&] { return (rng() >> 11) * (1.0 / 9007199254740992.0); };
  switch (kind) {
    case Init::GlorotUniform: {
      const double a = std::sqrt(6.0 / (fans.in + fans.out));
      for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<T>(a * (2 * uniform01() - 1));
      break;
    }
    case Init::HeNormal: {
      const double sigma = std::sqrt(2.0 / fans.in);
      for (std::size_t i = 0; i < h.size(); ++i) {
        const double u1 = 1.0 - uniform01(), u2 = uniform01();  // Box-Muller, u1 in (0, 1]
        h[i] = static_cast<T>(sigma * std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2));
      }
      break;
    }
    case Init::Constant:
      for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<T>(value);
      break;
  }
  scatterGlobal(p, h, p.value);
}

#define HYBRID3D_INSTANTIATE(T, D)                                                                \
  template void initialize<T, D>(const Parameter<T, D>&, Init, std::uint64_t, const std::string&, \
                                 double);
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_INSTANTIATE)
#undef HYBRID3D_INSTANTIATE

}  // namespace hybrid3d
