#pragma once
/// \file
/// A float, or eight float lanes (Floats8), behind the same operators (+, -, *, >) and a select,
/// so that a layer's arithmetic per value is written once, as a generic lambda or template, and
/// runs on one float (every backend, and the tails of host rows) and on eight lanes in the fused
/// 16-bit host rows (kernels/HostFusedRows.hpp). Each lane operation is the IEEE float operation
/// of the scalar code on that lane: the same bits.
///
/// Floats8 is built on GCC's and Clang's vector extensions, not on intrinsics: an always-inline
/// function without a target attribute (a layer's lambda) may not call an AVX intrinsic (GCC
/// refuses to inline it there), whereas generic vector operations are compiled for the function
/// they end up inlined into (an AVX2 row). Lanes pass by reference: a 32-byte vector passed by
/// value to a function built without AVX changes its ABI (Clang refuses the call).

#include <Kokkos_Core.hpp>

#include <hybrid3d/kernels/HostIsa.hpp>

namespace hybrid3d::Impl {

/// pick ? a : b: the scalar twin of the lanes' select below.
template <class T>
KOKKOS_INLINE_FUNCTION T select(bool pick, T a, T b) {
  return pick ? a : b;
}

#if HYBRID3D_HOST_AVX2
using FloatVector8 = float __attribute__((vector_size(32)));
using IntVector8 = int __attribute__((vector_size(32)));

/// Eight floats; a float converts to eight copies of itself.
struct Floats8 {
  FloatVector8 v;
  HYBRID3D_HOST_FORCEINLINE Floats8() = default;
  HYBRID3D_HOST_FORCEINLINE Floats8(float x) : v(FloatVector8{} + x) {}
};

/// A lane mask: all ones where a compare held.
struct Lanes8Mask {
  IntVector8 m;
};

HYBRID3D_HOST_FORCEINLINE Floats8 operator+(const Floats8& a, const Floats8& b) {
  Floats8 r;
  r.v = a.v + b.v;
  return r;
}
HYBRID3D_HOST_FORCEINLINE Floats8 operator-(const Floats8& a, const Floats8& b) {
  Floats8 r;
  r.v = a.v - b.v;
  return r;
}
HYBRID3D_HOST_FORCEINLINE Floats8 operator*(const Floats8& a, const Floats8& b) {
  Floats8 r;
  r.v = a.v * b.v;
  return r;
}
/// Ordered: false where either lane is a NaN, as float's >.
HYBRID3D_HOST_FORCEINLINE Lanes8Mask operator>(const Floats8& a, const Floats8& b) {
  return {a.v > b.v};
}
/// pick ? a : b lane by lane, as bits (and, and-not, or: the same in any compiler).
HYBRID3D_HOST_FORCEINLINE Floats8 select(const Lanes8Mask& pick, const Floats8& a,
                                         const Floats8& b) {
  Floats8 r;
  r.v = (FloatVector8)((pick.m & (IntVector8)a.v) | (~pick.m & (IntVector8)b.v));
  return r;
}
#endif

}  // namespace hybrid3d::Impl
