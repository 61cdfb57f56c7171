#pragma once
// Summing a View over a communicator, in place: weight gradients over the spatial and data
// communicators, batch-norm statistics, partial products of dense layers. Device data is
// staged through a host mirror unless hybrid3d was built with GPU-aware MPI.

#include <climits>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/Config.hpp>
#include <hybrid3d/comm/MpiTypes.hpp>
#include <hybrid3d/core/Error.hpp>

namespace hybrid3d {

template <class View>
void allreduceSum(const View& v, MPI_Comm comm) {
  static_assert(Kokkos::is_view<View>::value, "allreduceSum takes a Kokkos::View");
  using T = typename View::non_const_value_type;
  if (!v.span_is_contiguous()) fail("allreduceSum: view '", v.label(), "' is not contiguous");
  if (v.span() > static_cast<std::size_t>(INT_MAX))
    fail("allreduceSum: view '", v.label(), "' has more than 2^31 elements");
  constexpr bool hostReadable =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible;
  if constexpr (hostReadable || HYBRID3D_ENABLE_GPU_AWARE_MPI) {
    Kokkos::fence();  // kernels that produced v must be done before MPI reads it
    MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.span()), mpiType<T>(), MPI_SUM, comm);
  } else {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
    MPI_Allreduce(MPI_IN_PLACE, h.data(), static_cast<int>(h.span()), mpiType<T>(), MPI_SUM, comm);
    Kokkos::deep_copy(v, h);
  }
}

}  // namespace hybrid3d
