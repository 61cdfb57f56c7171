#pragma once
// Bounds for the layer tests of the 16-bit activation types (core/Scalar16.hpp): a layer in
// bfloat16 or float16 against the float layer on the same (16-bit representable) inputs, and
// against its own 1-rank run. Every test states its bound as |got - want| <= rel |want| + abs
// per element, derived from the type's unit roundoff u (one rounding of a float result to T moves
// it by at most u |result|) and from float's (2^-24) for sums that float accumulates in another
// order.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>

#include <gtest/gtest.h>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/core/Scalar16.hpp>

#include "Invariance.hpp"

namespace hybrid3d::test {

// Unit roundoff: half the spacing of the type's values at 1. bfloat16 keeps 8 significand bits
// (7 stored), float16 11 (10 stored), float 24.
template <class T>
constexpr double unitRoundoff() {
  if constexpr (std::is_same_v<T, bfloat16>)
    return 0x1p-8;
  else if constexpr (std::is_same_v<T, float16>)
    return 0x1p-11;
  else
    return 0x1p-24;
}
inline constexpr double kFloatRoundoff = 0x1p-24;

// float16 has subnormals below 2^-14, spaced 2^-24: rounding a value there errs by up to
// 2^-25 whatever its size, which a relative bound alone does not cover. bfloat16 has float's
// exponent range (the tests' values never leave it).
template <class T>
constexpr double subnormalFloor() {
  return std::is_same_v<T, float16> ? 0x1p-25 : 0.0;
}

// The array rounded through T and back: inputs both runs see exactly.
template <class T>
GlobalArray<double> roundedThrough(const GlobalArray<double>& a) {
  return convertGlobal<double>(convertGlobal<T>(a));
}

template <class A>
double maxAbs(const A& a) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a.data()[i])));
  return m;
}

struct Bound {
  double rel = 0, abs = 0;
};

// Every element: |got - want| <= rel |want| + abs. Reports how many are outside and the worst.
template <class A, class B>
void expectWithin(const A& got, const B& want, const Bound& bound, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t outside = 0, worst = 0;
  double worstRatio = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = double(got.data()[i]), w = double(want.data()[i]);
    const double err = std::abs(g - w), limit = bound.rel * std::abs(w) + bound.abs;
    const double ratio = limit > 0 ? err / limit : (err > 0 ? HUGE_VAL : 0);
    if (!(err <= limit)) ++outside;  // a NaN is outside too
    if (!(ratio <= worstRatio)) {
      worstRatio = ratio;
      worst = i;
    }
  }
  EXPECT_EQ(outside, 0u) << what << ": " << outside << " of " << want.size()
                         << " elements outside |got - want| <= " << bound.rel << " |want| + "
                         << bound.abs << "; worst: element " << worst << ", got "
                         << double(got.data()[worst]) << ", want " << double(want.data()[worst]);
}

}  // namespace hybrid3d::test
