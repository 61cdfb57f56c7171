#pragma once
// Pieces shared by Dense and FlattenDense: 2-D views of flat parameters, a gemm that also
// handles an empty inner dimension, the bias kernels, and an owned duplicate of a communicator.

#include <string>
#include <utility>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/layers/impl/Elementwise.hpp>
#include <hybrid3d/layers/impl/InstanceBlas.hpp>

namespace hybrid3d::Impl {

template <class T, class M>
using MatrixView =
    Kokkos::View<T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// A [rows, cols] row-major view of a flat parameter (PyTorch's [out, in] weight).
template <class T, class M>
MatrixView<T, M> asMatrix(const Kokkos::View<T*, M>& flat, Index rows, Index cols) {
  return MatrixView<T, M>(flat.data(), rows, cols);
}

// C := alpha op(A) op(B) + beta C, on `exec` (layers/impl/InstanceBlas.hpp). KokkosBlas::gemm
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
      KOKKOS_LAMBDA(const Index i) { y(i / F, i % F) += b(i % F); });
}

// g(o) += sum_n dy(n, o).
template <class ExecSpace, class DY, class G>
void addBiasGradient(const char* label, const ExecSpace& exec, const DY& dy, const G& g) {
  const Index N = static_cast<Index>(dy.extent(0));
  Kokkos::parallel_for(
      Impl::kernelLabel(label), rangePolicy(exec, 0, static_cast<Index>(dy.extent(1))),
      KOKKOS_LAMBDA(const Index o) {
        typename G::non_const_value_type s = 0;
        for (Index n = 0; n < N; ++n) s += dy(n, o);
        g(o) += s;
      });
}

}  // namespace hybrid3d::Impl
