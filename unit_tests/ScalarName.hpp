#pragma once
// The name of an activation scalar type, for test traces.

#include <type_traits>

#include <hybrid3d/core/Scalar16.hpp>

namespace hybrid3d::test {

template <class T>
const char* scalarName() {
  if constexpr (std::is_same_v<T, float>)
    return "float";
  else if constexpr (std::is_same_v<T, double>)
    return "double";
  else if constexpr (std::is_same_v<T, bfloat16>)
    return "bfloat16";
  else
    return "half";
}

}  // namespace hybrid3d::test
