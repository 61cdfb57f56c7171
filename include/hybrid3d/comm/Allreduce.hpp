#pragma once
/// \file
/// Summing a View over a communicator, in place: weight gradients over the spatial and data
/// communicators, batch-norm statistics, partial products of dense layers.
///
/// Device data is staged through pinned host memory unless hybrid3d was built with GPU-aware MPI
/// (core/StagingSpace.hpp). A layer that sums every step keeps a StagedAllreduce, whose staging
/// buffer is allocated once, at the layer's set-up; allreduceSum(v, comm) is for one-off sums
/// (tests, tools) and allocates a staging buffer per call.

#include <climits>
#include <cstddef>
#include <string>
#include <type_traits>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/comm/MpiTypes.hpp>
#include <hybrid3d/core/SpaceTraits.hpp>
#include <hybrid3d/core/StagingSpace.hpp>
#include <hybrid3d/core/Error.hpp>

namespace hybrid3d {

/// In-place sums of contiguous views of at most `capacity` elements of T in MemorySpace (a memory
/// space or a Kokkos::Device, core/SpaceTraits.hpp).
/// Stage is whether MPI is handed a host copy; it defaults to what MemorySpace and the build
/// need, and is a parameter only so that tests can run the staged path on the host.
template <class T, class MemorySpace, bool Stage = mpiStagesThroughHost<MemorySpace>>
class StagedAllreduce {
  HYBRID3D_ASSERT_SPACE(MemorySpace);

public:
  using memory_space = typename MemorySpace::memory_space;
  using execution_space = typename MemorySpace::execution_space;

  StagedAllreduce() = default;
  /// Allocates the staging buffer (only when Stage): `label` names it.
  StagedAllreduce(const std::string& label, std::size_t capacity)
      : label_(label),
        capacity_(capacity),
        staging_(stagingBuffer<T, MemorySpace, Stage>(label, capacity)) {}

  /// v := the sum of v over `comm`. The kernels that wrote v must have been issued to `exec`
  /// (it is fenced before MPI reads v or its copy); the sum is in v for work issued to `exec`
  /// afterwards (the copy back from the staging buffer is asynchronous on `exec`).
  template <class View>
  void operator()(const execution_space& exec, const View& v, MPI_Comm comm) const {
    static_assert(Kokkos::is_view<View>::value, "StagedAllreduce sums a Kokkos::View");
    static_assert(std::is_same_v<typename View::non_const_value_type, T> &&
                      std::is_same_v<typename View::memory_space, memory_space>,
                  "StagedAllreduce: the view's value type and memory space must be T, MemorySpace");
    if (!v.span_is_contiguous()) fail("allreduceSum: view '", v.label(), "' is not contiguous");
    if (v.span() > static_cast<std::size_t>(INT_MAX))
      fail("allreduceSum: view '", v.label(), "' has more than 2^31 elements");
    if (v.span() > capacity_)
      fail("allreduceSum: view '", v.label(), "' has ", v.span(), " elements, more than the ",
           capacity_, " that '", label_, "' was set up for");
    const int count = static_cast<int>(v.span());
    if constexpr (Stage) {
      // The view as a flat one (deep_copy wants equal ranks), and as much of the buffer.
      const Kokkos::View<T*, MemorySpace, Kokkos::MemoryUnmanaged> flat(v.data(), v.span());
      const auto host = Kokkos::subview(staging_, std::make_pair(std::size_t(0), v.span()));
      Kokkos::deep_copy(exec, host, flat);
      exec.fence();  // the copy must be complete before MPI reads it
      MPI_Allreduce(MPI_IN_PLACE, host.data(), count, mpiType<T>(), MPI_SUM, comm);
      Kokkos::deep_copy(exec, flat, host);
    } else {
      exec.fence();  // kernels that produced v must be done before MPI reads it
      MPI_Allreduce(MPI_IN_PLACE, v.data(), count, mpiType<T>(), MPI_SUM, comm);
    }
  }

  std::size_t capacity() const { return capacity_; }
  /// Empty unless Stage.
  const StagingBuffer<T, MemorySpace>& staging() const { return staging_; }

private:
  std::string label_;
  std::size_t capacity_ = 0;
  StagingBuffer<T, MemorySpace> staging_;
};

/// The sum of one number over `comm` (set-up: counts of cells or samples the ranks hold).
inline double sumOverRanks(double value, MPI_Comm comm) {
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_SUM, comm);
  return value;
}

/// One-off sum of v over `comm`, in place: fences everything first (whatever wrote v), and
/// returns with the sum in v. Allocates its staging buffer per call where one is needed.
template <class View>
void allreduceSum(const View& v, MPI_Comm comm) {
  static_assert(Kokkos::is_view<View>::value, "allreduceSum takes a Kokkos::View");
  using T = typename View::non_const_value_type;
  using M = typename View::memory_space;
  Kokkos::fence();
  const typename M::execution_space exec;
  StagedAllreduce<T, M>(v.label(), v.span())(exec, v, comm);
  exec.fence();
}

}  // namespace hybrid3d
