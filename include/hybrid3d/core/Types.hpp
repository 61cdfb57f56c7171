#pragma once
/// \file
/// Small value types shared by every part: 3-vectors of extents and process counts, and
/// half-open boxes of global voxel indices. Index arithmetic is 64-bit throughout: a 512^3 x 16
/// activation has more than 2^31 elements.

#include <array>
#include <cstdint>
#include <ostream>
#include <string>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/SpaceTraits.hpp>

namespace hybrid3d {

using Index = std::int64_t;
using Index3 = std::array<Index, 3>;  // (d, h, w) voxel counts or coordinates
using Int3 = std::array<int, 3>;      // (d, h, w) process counts or coordinates

/// The memory and execution spaces the library runs in unless told otherwise.
using DefaultExecutionSpace = Kokkos::DefaultExecutionSpace;
using DefaultMemorySpace = DefaultExecutionSpace::memory_space;

/// A half-open box [lo, hi) of global voxel indices. Empty when hi <= lo in any dimension.
struct Box3 {
  Index3 lo{0, 0, 0};
  Index3 hi{0, 0, 0};

  Index extent(int dim) const { return hi[dim] > lo[dim] ? hi[dim] - lo[dim] : 0; }
  Index3 extents() const { return {extent(0), extent(1), extent(2)}; }
  Index size() const { return extent(0) * extent(1) * extent(2); }
  bool empty() const { return size() == 0; }
  bool contains(const Box3& other) const {
    for (int i = 0; i < 3; ++i)
      if (other.extent(i) > 0 && (other.lo[i] < lo[i] || other.hi[i] > hi[i])) return false;
    return true;
  }
  friend bool operator==(const Box3& a, const Box3& b) { return a.lo == b.lo && a.hi == b.hi; }
};

/// The intersection of two boxes (possibly empty).
inline Box3 intersect(const Box3& a, const Box3& b) {
  Box3 r;
  for (int i = 0; i < 3; ++i) {
    r.lo[i] = a.lo[i] > b.lo[i] ? a.lo[i] : b.lo[i];
    r.hi[i] = a.hi[i] < b.hi[i] ? a.hi[i] : b.hi[i];
    if (r.hi[i] < r.lo[i]) r.hi[i] = r.lo[i];
  }
  return r;
}

/// "2x1x3" for grids and extents, as users write them in decks.
template <class T>
std::string toString(const std::array<T, 3>& v) {
  return std::to_string(v[0]) + "x" + std::to_string(v[1]) + "x" + std::to_string(v[2]);
}

inline std::ostream& operator<<(std::ostream& os, const Box3& b) {
  return os << "[" << b.lo[0] << "," << b.hi[0] << ")x[" << b.lo[1] << "," << b.hi[1] << ")x["
            << b.lo[2] << "," << b.hi[2] << ")";
}

}  // namespace hybrid3d
