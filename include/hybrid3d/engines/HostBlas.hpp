#pragma once
/// \file
/// The host BLAS behind KokkosBlas on host memory: whichever library provides `sgemm_` in this
/// process (Debian's libblas.so.3 alternative: OpenBLAS, BLIS, or the reference BLAS).
///
/// Its threads follow Kokkos. One rank per core is this project's CPU layout: a BLAS that starts
/// one thread per core in every rank (OpenBLAS's default) oversubscribes the node, and its idle
/// threads spin on the cores the other ranks compute on. So the layers that call host BLAS make
/// it use as many threads as Kokkos's default host execution space (1 with the Serial backend,
/// the OpenMP threads with OpenMP), unless the user chose a count (OPENBLAS_NUM_THREADS,
/// BLIS_NUM_THREADS): an explicit choice wins.

#include <string>

#include <Kokkos_Core.hpp>

namespace hybrid3d {

/// Sets the host BLAS's thread count as described above; the first call does it, later calls
/// do nothing. Called by the constructors of the layers that run host BLAS.
void hostBlasThreadsFollowKokkos();

/// What runs a host GEMM, for start-up reports and benchmarks:
/// "OpenBLAS 0.3.21 (Haswell kernels, 1 thread) in /usr/lib/.../libopenblasp-r0.3.21.so".
std::string hostBlasDescription();

namespace Impl {
/// Gives the host BLAS `threads` threads unless its own variable names a count; returns whether
/// it did (false: no threaded BLAS found, or the user chose).
bool matchHostBlasThreads(int threads);
}  // namespace Impl

/// What KokkosBlas::gemm runs on memory space M, for the layers' start-up report.
template <class M>
std::string gemmDescription() {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename M::memory_space>::accessible)
    return "KokkosBlas::gemm -> " + hostBlasDescription();
  else
    return "KokkosBlas::gemm on device memory";
}

}  // namespace hybrid3d
