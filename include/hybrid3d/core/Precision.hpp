#pragma once
/// \file
/// The deck's Model/precision as a type, parsed once: which scalar a run's activations are
/// stored in (core/Scalar16.hpp for the 16-bit ones, whose parameters stay float).

#include <cstddef>
#include <string>
#include <type_traits>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/Scalar16.hpp>

namespace hybrid3d {

enum class Precision { Float, Double, BFloat16, Half };

inline const char* toString(Precision p) {
  switch (p) {
    case Precision::Double:
      return "double";
    case Precision::BFloat16:
      return "bfloat16";
    case Precision::Half:
      return "half";
    case Precision::Float:
      break;
  }
  return "float";
}

/// The deck's spelling; anything else is refused naming the choices.
inline Precision parsePrecision(const std::string& name) {
  for (Precision p : {Precision::Float, Precision::Double, Precision::BFloat16, Precision::Half})
    if (name == toString(p)) return p;
  fail("precision '", name, "' is not one of float, double, bfloat16, half");
}

template <class T>
constexpr Precision precisionOf() {
  if constexpr (std::is_same_v<T, double>) return Precision::Double;
  if constexpr (std::is_same_v<T, bfloat16>) return Precision::BFloat16;
  if constexpr (std::is_same_v<T, float16>) return Precision::Half;
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> || isScalar16<T>);
  return Precision::Float;
}

/// Bytes of one activation value, and of one parameter value (float for the 16-bit types).
inline std::size_t activationBytes(Precision p) {
  return p == Precision::Double ? 8 : p == Precision::Float ? 4 : 2;
}
inline std::size_t parameterBytes(Precision p) { return p == Precision::Double ? 8 : 4; }

template <class T>
struct ScalarTag {
  using type = T;
};

/// f(ScalarTag<T>{}) with T the activation type of p: the one place a run turns the deck's
/// precision into a template argument.
template <class F>
decltype(auto) withPrecision(Precision p, F&& f) {
  switch (p) {
    case Precision::Double:
      return f(ScalarTag<double>{});
    case Precision::BFloat16:
      return f(ScalarTag<bfloat16>{});
    case Precision::Half:
      return f(ScalarTag<float16>{});
    case Precision::Float:
      break;
  }
  return f(ScalarTag<float>{});
}

}  // namespace hybrid3d
