#pragma once
// Pieces shared by Dense and FlattenDense: 2-D views of flat parameters, a gemm that also
// handles an empty inner dimension, the bias kernels, and an owned duplicate of a communicator.

#include <string>
#include <type_traits>
#include <utility>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>
#include <hybrid3d/kernels/HostRows.hpp>
#include <hybrid3d/engines/impl/InstanceBlas.hpp>

namespace hybrid3d::Impl {

template <class T, class M>
using MatrixView =
    Kokkos::View<T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// A [rows, cols] row-major view of a flat parameter (PyTorch's [out, in] weight).
template <class T, class M>
MatrixView<T, M> asMatrix(const Kokkos::View<T*, M>& flat, Index rows, Index cols) {
  return MatrixView<T, M>(flat.data(), rows, cols);
}

// C := alpha op(A) op(B) + beta C, on `exec` (engines/impl/InstanceBlas.hpp). KokkosBlas::gemm
// returns without touching C when the inner dimension is empty (a rank that owns no voxels),
// where we still need C := beta C (zeroFill: Kokkos::deep_copy would allocate, see there).
template <class ExecSpace, class A, class B, class C>
void denseGemm(const ExecSpace& exec, const char* ta, const char* tb, double alpha, const A& a,
               const B& b, double beta, const C& c) {
  using T = typename C::non_const_value_type;
  const bool transA = ta[0] == 'T';
  const std::size_t inner = transA ? a.extent(0) : a.extent(1);
  if (c.extent(0) == 0 || c.extent(1) == 0) return;
  if (inner == 0) {
    if (beta == 0.0)
      Impl::zeroFill(exec, c);
    else if (beta != 1.0)
      fail("hybrid3d gemm: beta other than 0 or 1 with an empty product");
    return;
  }
  Impl::gemm(exec, ta, tb, T(alpha), a, b, T(beta), c);
}

// y(n, o) += b(o).
template <class ExecSpace, class Y, class Bias>
void addBias(const char* label, const ExecSpace& exec, const Y& y, const Bias& b) {
  const Index F = static_cast<Index>(y.extent(1));
  Kokkos::parallel_for(
      Impl::kernelLabel(label), rangePolicy(exec, 0, static_cast<Index>(y.size())),
      KOKKOS_LAMBDA(const Index i) { y(i / F, i % F) += b(i % F); });  // float's and double's
}

// g(o) += sum_n dy(n, o).
template <class ExecSpace, class DY, class G>
void addBiasGradient(const char* label, const ExecSpace& exec, const DY& dy, const G& g) {
  const Index N = static_cast<Index>(dy.extent(0));
  Kokkos::parallel_for(
      Impl::kernelLabel(label), rangePolicy(exec, 0, static_cast<Index>(dy.extent(1))),
      KOKKOS_LAMBDA(const Index o) {
        using R = typename G::non_const_value_type;  // float for 16-bit dy
        R s = 0;
        for (Index n = 0; n < N; ++n) s += R(dy(n, o));
        g(o) += s;
      });
}

// The products of the 16-bit activation types (core/Scalar16.hpp) with float weights, for Dense
// and FlattenDense: one work item per entry of the result, its dot product summed in float over
// the inner dimension (the activations read as floats), the result rounded once (or added to a
// float gradient). The dense part's matrices are small (a few samples by at most a few thousand
// features on a rank), so a plain kernel costs less than converting them for a float gemm, and
// allocates nothing.

// y(n, o) := sum_i x(n, i) w(o, i) (+ b(o) when b is not empty): y = x W^T + b, y of any
// scalar (float partial sums in FlattenDense, rounded activations in Dense).
template <class ExecSpace, class X, class W, class B, class Y>
void mixedDenseForward(const char* label, const ExecSpace& exec, const X& x, const W& w, const B& b,
                       const Y& y) {
  using R = typename W::non_const_value_type;  // float
  using Out = typename Y::non_const_value_type;
  const Index N = static_cast<Index>(y.extent(0)), O = static_cast<Index>(y.extent(1));
  const Index I = static_cast<Index>(x.extent(1));
  const bool bias = b.data() != nullptr;
  Kokkos::parallel_for(
      Impl::kernelLabel(label), rangePolicy(exec, 0, N * O), KOKKOS_LAMBDA(const Index e) {
        const Index n = e / O, o = e % O;
        R s = 0;
        for (Index i = 0; i < I; ++i) s += R(x(n, i)) * w(o, i);
        if (bias) s += b(o);
        y(n, o) = Out(s);
      });
}

// y(n, o) := s(n, o) (+ b(o) when b is not empty), in s's type, rounded once into y.
template <class ExecSpace, class S, class B, class Y>
void roundFeatures(const char* label, const ExecSpace& exec, const S& s, const B& b, const Y& y) {
  using R = typename S::non_const_value_type;
  using Out = typename Y::non_const_value_type;
  const Index F = static_cast<Index>(y.extent(1));
  const bool bias = b.data() != nullptr;
  Kokkos::parallel_for(
      Impl::kernelLabel(label), rangePolicy(exec, 0, static_cast<Index>(y.size())),
      KOKKOS_LAMBDA(const Index i) {
        const Index n = i / F, o = i % F;
        y(n, o) = Out(bias ? s(n, o) + b(o) : R(s(n, o)));
      });
}

// Host memory: the columns and samples of dx a work item sums side by side.
inline constexpr Index kDenseHostColumns = 512, kDenseHostSamples = 4;

// mixedDenseBackwardData on host memory with the same bits: a work item takes up to
// kDenseHostSamples samples and a block of kDenseHostColumns columns i, and runs their sums side
// by side over o in the same order (from 0, s_i += dy(n, o) w(o, i) for o = 0, 1, ...), so that W
// is read along its rows, once per group of samples. One entry at a time read a column of W, a
// stride of I floats per term: FlattenDense's backward (fc1, I = its rank's input features) took
// one cache line per multiply-add. Multiplies and adds only, no FMA: the same bits on the
// baseline and the AVX2 build (kernels/HostRows.hpp).
template <class ExecSpace, class DY, class W, class DX>
void mixedDenseBackwardDataOnHost(const char* label, const ExecSpace& exec, const DY& dy,
                                  const W& w, const DX& dx) {
  using R = typename W::non_const_value_type;
  using Out = typename DX::non_const_value_type;
  constexpr Index NS = kDenseHostSamples, NC = kDenseHostColumns;
  const Index N = static_cast<Index>(dx.extent(0)), I = static_cast<Index>(dx.extent(1));
  const Index O = static_cast<Index>(dy.extent(1));
  const Index blocks = (I + NC - 1) / NC, groups = (N + NS - 1) / NS;
  if (groups * blocks == 0) return;
  const R* const wp = w.data();
  const Index ws = static_cast<Index>(w.stride(0));
  const auto block = [=](const Index g, const Index b, Index, Index) HYBRID3D_HOST_INLINE_LAMBDA {
    const Index first = b * NC, count = I - first < NC ? I - first : NC;
    const Index n0 = g * NS, samples = N - n0 < NS ? N - n0 : NS, terms = O;
    R s[NS][NC];
    for (Index n = 0; n < samples; ++n)
      for (Index i = 0; i < count; ++i) s[n][i] = 0;
    for (Index o = 0; o < terms; ++o) {
      const R* __restrict row = wp + o * ws + first;
      for (Index n = 0; n < samples; ++n) {
        const R gn = R(dy(n0 + n, o));
        R* __restrict sn = s[n];
        for (Index i = 0; i < count; ++i) sn[i] += gn * row[i];
      }
    }
    for (Index n = 0; n < samples; ++n) {
      Out* __restrict out = &dx(n0 + n, first);
      for (Index i = 0; i < count; ++i) out[i] = Out(s[n][i]);
    }
  };
  const auto run = hostRowFunction<decltype(block)>(bestHostIsa());
  Kokkos::parallel_for(Impl::kernelLabel(label), rangePolicy(exec, 0, groups * blocks),
                       [=](const Index e) { run(block, e / blocks, e % blocks, 0, 0); });
}

// dx(n, i) := sum_o dy(n, o) w(o, i): dx = dy W, one work item per entry (every backend; host
// memory takes mixedDenseBackwardData's host form).
template <class ExecSpace, class DY, class W, class DX>
void mixedDenseBackwardDataByEntry(const char* label, const ExecSpace& exec, const DY& dy,
                                   const W& w, const DX& dx) {
  using R = typename W::non_const_value_type;
  using Out = typename DX::non_const_value_type;
  const Index N = static_cast<Index>(dx.extent(0)), I = static_cast<Index>(dx.extent(1));
  const Index O = static_cast<Index>(dy.extent(1));
  Kokkos::parallel_for(
      Impl::kernelLabel(label), rangePolicy(exec, 0, N * I), KOKKOS_LAMBDA(const Index e) {
        const Index n = e / I, i = e % I;
        R s = 0;
        for (Index o = 0; o < O; ++o) s += R(dy(n, o)) * w(o, i);
        dx(n, i) = Out(s);
      });
}

// dx := dy W on any backend, with the same bits.
template <class ExecSpace, class DY, class W, class DX>
void mixedDenseBackwardData(const char* label, const ExecSpace& exec, const DY& dy, const W& w,
                            const DX& dx) {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename ExecSpace::memory_space>::accessible)
    mixedDenseBackwardDataOnHost(label, exec, dy, w, dx);
  else
    mixedDenseBackwardDataByEntry(label, exec, dy, w, dx);
}

// gw(o, i) += sum_n dy(n, o) x(n, i): the weight gradient dW += dy^T x, in float, one work item
// per entry (every backend; host memory takes mixedDenseAddWeightGradient's host form).
template <class ExecSpace, class DY, class X, class G>
void mixedDenseAddWeightGradientByEntry(const char* label, const ExecSpace& exec, const DY& dy,
                                        const X& x, const G& gw) {
  using R = typename G::non_const_value_type;
  const Index O = static_cast<Index>(gw.extent(0)), I = static_cast<Index>(gw.extent(1));
  const Index N = static_cast<Index>(dy.extent(0));
  Kokkos::parallel_for(
      Impl::kernelLabel(label), rangePolicy(exec, 0, O * I), KOKKOS_LAMBDA(const Index e) {
        const Index o = e / I, i = e % I;
        R s = 0;
        for (Index n = 0; n < N; ++n) s += R(dy(n, o)) * R(x(n, i));
        gw(o, i) += s;
      });
}

// Host memory: the rows o and columns i of dW a work item sums side by side.
inline constexpr Index kDenseHostRows = 8;

// mixedDenseAddWeightGradient on host memory with the same bits: a work item takes
// kDenseHostRows rows o and a block of kDenseHostColumns columns i and runs their sums side by
// side in the same order (from 0, s += dy(n, o) x(n, i) for n = 0, 1, ..., then gw += s), each
// sample's block of x widened to float once (HostConvert.hpp: F16C for half) for the rows. One
// entry at a time divided its index by I and converted x once per row o: FlattenDense's
// backward (fc1) in bfloat16 took about 5 times float's. Multiplies and adds only, no FMA: the
// same bits on the baseline and the AVX2 build (kernels/HostRows.hpp).
template <class ExecSpace, class DY, class X, class G>
void mixedDenseAddWeightGradientOnHost(const char* label, const ExecSpace& exec, const DY& dy,
                                       const X& x, const G& gw) {
  using R = typename G::non_const_value_type;
  static_assert(std::is_same_v<R, float>, "the 16-bit types' weight gradients are float");
  constexpr Index NR = kDenseHostRows, NC = kDenseHostColumns;
  const Index O = static_cast<Index>(gw.extent(0)), I = static_cast<Index>(gw.extent(1));
  const Index N = static_cast<Index>(dy.extent(0));
  const Index blocks = (I + NC - 1) / NC, groups = (O + NR - 1) / NR;
  if (groups * blocks == 0) return;
  if (x.stride(1) != 1 || gw.stride(1) != 1)  // not rows of adjacent values: the portable form
    return mixedDenseAddWeightGradientByEntry(label, exec, dy, x, gw);
  const HostIsa isa = bestHostIsa();
  const auto block = [=](const Index g, const Index b, Index, Index) HYBRID3D_HOST_INLINE_LAMBDA {
    const Index first = b * NC, count = I - first < NC ? I - first : NC;
    const Index o0 = g * NR, rows = O - o0 < NR ? O - o0 : NR;
    R s[NR][NC];
    alignas(32) R xs[NC];
    for (Index r = 0; r < rows; ++r)
      for (Index i = 0; i < count; ++i) s[r][i] = 0;
    for (Index n = 0; n < N; ++n) {
      const auto* xn = &x(n, first);
      if constexpr (isScalar16<typename X::non_const_value_type>)
        widenRun(isa, xn, xs, count);
      else
        for (Index i = 0; i < count; ++i) xs[i] = R(xn[i]);
      for (Index r = 0; r < rows; ++r) {
        const R gn = R(dy(n, o0 + r));
        R* __restrict sr = s[r];
        for (Index i = 0; i < count; ++i) sr[i] += gn * xs[i];
      }
    }
    for (Index r = 0; r < rows; ++r) {
      R* __restrict out = &gw(o0 + r, first);
      for (Index i = 0; i < count; ++i) out[i] += s[r][i];
    }
  };
  const auto run = hostRowFunction<decltype(block)>(isa);
  Kokkos::parallel_for(Impl::kernelLabel(label), rangePolicy(exec, 0, groups * blocks),
                       [=](const Index e) { run(block, e / blocks, e % blocks, 0, 0); });
}

// gw(o, i) += sum_n dy(n, o) x(n, i) on any backend, with the same bits.
template <class ExecSpace, class DY, class X, class G>
void mixedDenseAddWeightGradient(const char* label, const ExecSpace& exec, const DY& dy, const X& x,
                                 const G& gw) {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename ExecSpace::memory_space>::accessible)
    mixedDenseAddWeightGradientOnHost(label, exec, dy, x, gw);
  else
    mixedDenseAddWeightGradientByEntry(label, exec, dy, x, gw);
}

}  // namespace hybrid3d::Impl
