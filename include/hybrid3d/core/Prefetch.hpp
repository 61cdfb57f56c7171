#pragma once
/// \file
/// A software prefetch for host kernels that walk several rows at once. The hardware prefetchers
/// follow one or two sequential streams well but fell behind where a work item reads rows of
/// several planes (a pooling window, a halo's H face): asking for the rows of a later work item
/// made MaxPool3d's forward at 16x128^3 run markedly faster (bench_memory_bound; the figures are
/// in docs/performance-notes.md, "Pooling").

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::Impl {

/// Asks the host's caches for the `count` elements from `p` (a no-op in device code and for
/// compilers without __builtin_prefetch). A prefetch never faults.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION void prefetchOnHost(const T* p, Index count) {
#if defined(__GNUC__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__) && \
    !defined(__SYCL_DEVICE_ONLY__)
  constexpr Index perLine = Index(64 / sizeof(T));
  for (Index k = 0; k < count; k += perLine) __builtin_prefetch(p + k);
  __builtin_prefetch(p + count - 1);  // an unaligned run ends in one more line
#else
  (void)p;
  (void)count;
#endif
}

}  // namespace hybrid3d::Impl
