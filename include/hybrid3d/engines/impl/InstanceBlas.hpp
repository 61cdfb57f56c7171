#pragma once
// KokkosBlas::gemm and gemv on the caller's execution space instance.
//
// Kokkos-Kernels 4.1 and later take the instance: the product is ordered with the layer's other
// kernels on it (its CUDA stream, say), and nothing is constructed per call. The overloads
// without an instance construct a default one each call, and on Kokkos 4 a default-constructed
// OpenMP or Serial instance allocates its shared-pointer control block: one heap allocation
// per product inside the step (step_allocation_tests counts them). Debian's Kokkos-Kernels 3.4
// has only the default-instance overloads (and no version macro): there `exec` is fenced
// before the product and every instance after it, so kernels on `exec` see it in order.

#include <KokkosBlas2_gemv.hpp>
#include <KokkosBlas3_gemm.hpp>
#include <KokkosKernels_config.h>
#include <Kokkos_Core.hpp>

#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40100
#define HYBRID3D_BLAS_TAKES_AN_INSTANCE 1
#else
#define HYBRID3D_BLAS_TAKES_AN_INSTANCE 0
#endif

namespace hybrid3d::Impl {

// C := alpha op(A) op(B) + beta C.
template <class Exec, class A, class B, class C>
void gemm(const Exec& exec, const char ta[], const char tb[], typename A::const_value_type& alpha,
          const A& a, const B& b, typename C::const_value_type& beta, const C& c) {
#if HYBRID3D_BLAS_TAKES_AN_INSTANCE
  KokkosBlas::gemm(exec, ta, tb, alpha, a, b, beta, c);
#else
  exec.fence();
  KokkosBlas::gemm(ta, tb, alpha, a, b, beta, c);
  Kokkos::fence();
#endif
}

// y := alpha op(A) x + beta y.
template <class Exec, class A, class X, class Y>
void gemv(const Exec& exec, const char trans[], typename A::const_value_type& alpha, const A& a,
          const X& x, typename Y::const_value_type& beta, const Y& y) {
#if HYBRID3D_BLAS_TAKES_AN_INSTANCE
  KokkosBlas::gemv(exec, trans, alpha, a, x, beta, y);
#else
  exec.fence();
  KokkosBlas::gemv(trans, alpha, a, x, beta, y);
  Kokkos::fence();
#endif
}

}  // namespace hybrid3d::Impl
