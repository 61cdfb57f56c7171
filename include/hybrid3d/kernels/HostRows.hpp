#pragma once
/// \file
/// The element-wise layers' rows on host memory as plain loops over pointers, the loop body
/// compiled for the instruction set HostIsa.hpp picks: forEachOwnedRowOnHost is the host twin of
/// forEachRowCell (kernels/Elementwise.hpp), one call per row instead of one per cell.
///
/// Why: with the 16-bit activation types (core/Scalar16.hpp) every cell converts to float and
/// back, and inside Kokkos' vector ranges over 5-D view indices the baseline x86-64 build did
/// not vectorise those conversions: LeakyReLU, Dropout and BatchNorm3d took 1.5 to 2.5 times
/// float's time for half the bytes (issue 38). A row as a loop over pointers, built for AVX2
/// (8 lanes, vpackusdw, vpblendvb), vectorises them. The conversions are integer shifts, adds,
/// compares and selects, and float16's one float add, the same operations on every instruction
/// set ("avx2" enables no FMA, so nothing is contracted): the row's bits do not depend on the
/// build that runs it, as HostIsa.hpp requires.
///
/// The row body is a lambda marked HYBRID3D_HOST_INLINE_LAMBDA, so that each wrapper
/// (hostRowBaseline, hostRowAvx2) compiles it for its own target. It must copy what it reads from
/// its captures into locals before its cell loop: a capture read only on one side of a select is a
/// conditional load from the closure, and GCC gives up on the loop (no masked load at baseline).

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>
#include <hybrid3d/kernels/HostConvert.hpp>
#include <hybrid3d/kernels/HostFusedRows.hpp>
#include <hybrid3d/kernels/HostIsa.hpp>

// A host lambda's body inlined into each caller (see HYBRID3D_HOST_FORCEINLINE); empty where
// there is no AVX2 copy to compile it for (device compilers' host passes).
#if HYBRID3D_HOST_AVX2
#define HYBRID3D_HOST_INLINE_LAMBDA __attribute__((always_inline))
#else
#define HYBRID3D_HOST_INLINE_LAMBDA
#endif

namespace hybrid3d::Impl {

/// Where the rows of a tensor's owned box start, as a pointer and strides: row (n, c, z, y) of
/// the owned box (offsets inside it) starts at at(n, c, z, y), its cells adjacent.
template <class T>
struct HostRowStart {
  T* first = nullptr;
  Index sample = 0, channel = 0, plane = 0, row = 0;

  HYBRID3D_HOST_FORCEINLINE T* at(Index n, Index c, Index z, Index y) const {
    return first + n * sample + c * channel + z * plane + y * row;
  }
};

template <class T, class M>
HostRowStart<T> hostRowStart(const DistTensor<T, M>& t) {
  const auto v = t.view();
  const GhostOffset o = ghostOffset(t);
  return {v.data() + o.d * Index(v.stride(2)) + o.h * Index(v.stride(3)) + o.w, Index(v.stride(0)),
          Index(v.stride(1)), Index(v.stride(2)), Index(v.stride(3))};
}

// A row is a call of its own, through a function pointer: inlined into a loop over the rows of
// a plane, GCC 12 unswitched that loop nest and then left float16's conversions scalar.
template <class Row>
auto hostRowBaseline(const Row& row, Index n, Index c, Index z, Index y) {
  return row(n, c, z, y);
}

#if HYBRID3D_HOST_AVX2
template <class Row>
HYBRID3D_TARGET_AVX2 auto hostRowAvx2(const Row& row, Index n, Index c, Index z, Index y) {
  return row(n, c, z, y);
}
#endif

/// The function that runs row(n, c, z, y) compiled for `isa` (Baseline where the build or the
/// CPU lacks AVX2), and returns what it returns.
template <class Row>
auto hostRowFunction(HostIsa isa) {
  auto run = &hostRowBaseline<Row>;
#if HYBRID3D_HOST_AVX2
  if (isa == HostIsa::Avx2) run = &hostRowAvx2<Row>;
#else
  (void)isa;
#endif
  return run;
}

/// Values of a half row converted per step of mapRow: the float copies stay in L1.
inline constexpr Index kFloatChunk = 512;

/// Whether T's rows convert a chunk at a time into float copies (mapRow): float16, whose
/// conversions are one F16C instruction per 8 values that way and about twenty integer operations
/// inline. bfloat16's widening is a shift: inline in the row's loop it measured faster than
/// through the buffers (bench_memory_bound, 32x64^3: LeakyReLU 0.92 against 1.18 of float's).
template <class T>
inline constexpr bool kRowsThroughFloats = std::is_same_v<T, float16>;

/// out[i] := T(op(C(a[i]))) for i < width, C = ComputeOf<T>. The 16-bit types where
/// fusedRows<T>(isa) (AVX2 and F16C) run fused in registers, 16 values at a time with op
/// on Floats8 (kernels/HostFusedRows.hpp): op is then a generic lambda of float's arithmetic
/// (kernels/FloatLanes.hpp), unless kLanes is false (an op with library calls). Otherwise inline,
/// or for half on float copies, kFloatChunk values at a time (`a` widened into a buffer, op run on
/// it in place, the buffer narrowed into `out`, with widenRun and narrowRun of `isa`). The same
/// float operations every way, each result rounded once: the same bits. `out` may be `a`.
template <bool kLanes = true, class T, class Op>
HYBRID3D_HOST_FORCEINLINE void mapRow(HostIsa isa, Index width, const T* a, T* out, const Op& op) {
  using C = ComputeOf<T>;
  (void)isa;
#if HYBRID3D_HOST_AVX2
  if constexpr (kLanes && isScalar16<T>)
    if (fusedRows<T>(isa)) return mapRowFused(width, a, out, op);
#endif
  if constexpr (kRowsThroughFloats<T>) {
    alignas(32) float buffer[kFloatChunk];
    for (Index first = 0; first < width; first += kFloatChunk) {
      const Index count = std::min(kFloatChunk, width - first);
      widenRun(isa, a + first, buffer, count);
      for (Index i = 0; i < count; ++i) buffer[i] = op(buffer[i]);
      narrowRun(isa, static_cast<const float*>(buffer), out + first, count);
    }
  } else {
    for (Index i = 0; i < width; ++i) out[i] = T(op(C(a[i])));
  }
}

/// out[i] := keep[i] ? T(op(C(a[i]))) : T(0) for i < width, `keep` holding 0 or -1 (Dropout's
/// masks, DropoutMask::keptRun), T a 16-bit type: mapRow's ways, the fused one and-ing the
/// narrowed bits with the mask (T(0)'s bits are 0).
template <class T, class Op>
HYBRID3D_HOST_FORCEINLINE void mapRowKept(HostIsa isa, Index width, const T* a, T* out,
                                          const std::int16_t* keep, const Op& op) {
  static_assert(isScalar16<T>, "mapRowKept: the 16-bit types' rows");
  (void)isa;
#if HYBRID3D_HOST_AVX2
  if (fusedRows<T>(isa)) return mapRowFused(width, a, out, op, KeepArray{keep});
#endif
  if constexpr (kRowsThroughFloats<T>) {
    alignas(32) float buffer[kFloatChunk];
    for (Index first = 0; first < width; first += kFloatChunk) {
      const Index count = std::min(kFloatChunk, width - first);
      const std::int16_t* const k = keep + first;
      widenRun(isa, a + first, buffer, count);
      for (Index i = 0; i < count; ++i) buffer[i] = k[i] ? op(buffer[i]) : 0.0f;
      narrowRun(isa, static_cast<const float*>(buffer), out + first, count);
    }
  } else {
    for (Index i = 0; i < width; ++i) {
      const float v = float(a[i]);  // read on both sides of the select, or it is a branch
      out[i] = T(keep[i] ? op(v) : 0.0f);
    }
  }
}

/// out[i] := T(op(C(a[i]), C(b[i]))) for i < width: mapRow with a second input row (out may be
/// a or b).
template <bool kLanes = true, class T, class Op>
HYBRID3D_HOST_FORCEINLINE void mapRows(HostIsa isa, Index width, const T* a, const T* b, T* out,
                                       const Op& op) {
  using C = ComputeOf<T>;
  (void)isa;
#if HYBRID3D_HOST_AVX2
  if constexpr (kLanes && isScalar16<T>)
    if (fusedRows<T>(isa)) return mapRowsFused(width, a, b, out, op);
#endif
  if constexpr (kRowsThroughFloats<T>) {
    alignas(32) float bufferA[kFloatChunk], bufferB[kFloatChunk];
    for (Index first = 0; first < width; first += kFloatChunk) {
      const Index count = std::min(kFloatChunk, width - first);
      widenRun(isa, a + first, bufferA, count);
      widenRun(isa, b + first, bufferB, count);
      for (Index i = 0; i < count; ++i) bufferA[i] = op(bufferA[i], bufferB[i]);
      narrowRun(isa, static_cast<const float*>(bufferA), out + first, count);
    }
  } else {
    for (Index i = 0; i < width; ++i) out[i] = T(op(C(a[i]), C(b[i])));
  }
}

/// row(n, c, z, y) for every row of `rows` on a host execution space, a plane's rows one work
/// item, each row compiled for `isa` (hostRowFunction). Rows are independent.
template <class ExecSpace, class Row>
void forEachOwnedRowOnHost(std::string_view label, const ExecSpace& exec, const OwnedRows& rows,
                           HostIsa isa, const Row& row) {
  static_assert(
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible,
      "forEachOwnedRowOnHost runs on host memory only");
  if (rows.empty()) return;
  const auto run = hostRowFunction<Row>(isa);
  Kokkos::parallel_for(Impl::kernelLabel(label), rangePolicy(exec, 0, rows.planes),
                       [=](const Index plane) {
                         Index n, c, z;
                         rows.decode(plane, n, c, z);
                         for (Index y = 0; y < rows.e1; ++y) run(row, n, c, z, y);
                       });
}

}  // namespace hybrid3d::Impl
