#pragma once
/// \file
/// Floor and ceiling division of signed indices, for window arithmetic that reaches below
/// index 0 (padding): C++'s `/` truncates toward zero, which is the floor only for a >= 0.

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d {

/// floor(a / b) for b > 0 and a of either sign.
KOKKOS_INLINE_FUNCTION constexpr Index floorDiv(Index a, Index b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
/// ceil(a / b) for b > 0 and a of either sign.
KOKKOS_INLINE_FUNCTION constexpr Index ceilDiv(Index a, Index b) { return floorDiv(a + b - 1, b); }

}  // namespace hybrid3d
