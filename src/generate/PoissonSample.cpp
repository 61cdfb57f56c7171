#include <hybrid3d/generate/CounterHash.hpp>
#include <hybrid3d/generate/PoissonSample.hpp>

#include <cmath>

namespace hybrid3d::generate {

namespace {

// Inversion: walk the cumulative distribution until it passes u. exp(-lambda) does not
// underflow for lambda < 10, and the walk takes about lambda steps.
std::int64_t poissonByInversion(double lambda, std::uint64_t key) {
  const double u = uniform01(key, 0);
  double p = std::exp(-lambda);
  double cdf = p;
  std::int64_t k = 0;
  // The cap only guards against u rounding above the total mass (1 - cdf ~ 1e-16).
  while (u > cdf && k < 1000) {
    ++k;
    p *= lambda / static_cast<double>(k);
    cdf += p;
  }
  return k;
}

// PTRS: W. Hoermann, "The transformed rejection method for generating Poisson random
// variables", Insurance: Mathematics and Economics 12 (1993) 39-45, algorithm PTRS.
std::int64_t poissonByTransformedRejection(double lambda, std::uint64_t key) {
  const double slam = std::sqrt(lambda);
  const double loglam = std::log(lambda);
  const double b = 0.931 + 2.53 * slam;
  const double a = -0.059 + 0.02483 * b;
  const double invAlpha = 1.1239 + 1.1328 / (b - 3.4);
  const double vr = 0.9277 - 3.6224 / (b - 2.0);
  for (std::uint64_t draw = 0;; draw += 2) {
    const double u = uniform01(key, draw) - 0.5;
    const double v = uniform01(key, draw + 1);
    const double us = 0.5 - std::fabs(u);
    const double k = std::floor((2.0 * a / us + b) * u + lambda + 0.43);
    if (us >= 0.07 && v <= vr) return static_cast<std::int64_t>(k);
    if (k < 0.0 || (us < 0.013 && v > us)) continue;
    if (std::log(v) + std::log(invAlpha) - std::log(a / (us * us) + b) <=
        -lambda + k * loglam - std::lgamma(k + 1.0))
      return static_cast<std::int64_t>(k);
  }
}

}  // namespace

std::int64_t poissonDraw(double lambda, std::uint64_t key) {
  if (!(lambda > 0.0)) return 0;
  return lambda < 10.0 ? poissonByInversion(lambda, key)
                       : poissonByTransformedRejection(lambda, key);
}

}  // namespace hybrid3d::generate
