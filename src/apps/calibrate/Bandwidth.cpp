// The triad and the launch overhead (Probes.hpp), Kokkos kernels on the default execution space:
// device memory on a GPU, host memory on a CPU.
#include <unistd.h>

#include <algorithm>
#include <vector>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/Types.hpp>

#include "Probes.hpp"
#include "Statistics.hpp"

namespace hybrid3d::app::calibrate {

namespace {

using Exec = DefaultExecutionSpace;
using Array = Kokkos::View<double*, DefaultMemorySpace>;

// On host cores the ranks share the last-level cache: the arrays of all ranks together are 4
// times it, each at least 8 MiB (far beyond a core's own L2). On a GPU each rank has its device
// and the device's L2 (tens of MiB, which sysconf does not know): 256 MiB per array.
std::size_t arrayBytes(int ranks) {
  constexpr bool host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, DefaultMemorySpace>::accessible;
  if (!host) return std::size_t(256) << 20;
  long cache = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
  cache = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  if (cache <= 0) cache = 64l << 20;  // unknown: as large as today's large L3s
  const std::size_t share = 4 * std::size_t(cache) / (3 * std::size_t(ranks));
  return std::max<std::size_t>(std::size_t(8) << 20, share);
}

}  // namespace

Bandwidth triadBandwidth(MPI_Comm world) {
  int ranks;
  MPI_Comm_size(world, &ranks);
  const std::size_t bytes = arrayBytes(ranks);
  const Index n = static_cast<Index>(bytes / sizeof(double));
  Exec exec;
  Array a("hybrid3d::calibrate::triad a", n), b("hybrid3d::calibrate::triad b", n),
      c("hybrid3d::calibrate::triad c", n);
  // Views are zeroed when made, which touches every page: no first-touch cost is timed.
  Kokkos::deep_copy(exec, b, 1.0);
  Kokkos::deep_copy(exec, c, 2.0);
  exec.fence();
  const double s = 0.5;
  std::vector<double> seconds;
  MPI_Barrier(world);
  for (int rep = 0; rep < 11; ++rep) {
    const double t0 = MPI_Wtime();
    Kokkos::parallel_for(
        "hybrid3d::calibrate::triad", rangePolicy(exec, 0, n),
        KOKKOS_LAMBDA(const Index i) { a(i) = b(i) + s * c(i); });
    exec.fence();
    if (rep > 0) seconds.push_back(MPI_Wtime() - t0);  // the first warms the kernel up
  }
  const double GBs = 3e-9 * double(n) * sizeof(double) / median(seconds);
  return {medianOverRanks(world, GBs), bytes};
}

double launchOverheadUs(MPI_Comm world) {
  Exec exec;
  Array x("hybrid3d::calibrate::launch", 1);
  std::vector<double> seconds;
  MPI_Barrier(world);
  for (int rep = 0; rep < 1100; ++rep) {
    const double t0 = MPI_Wtime();
    Kokkos::parallel_for(
        "hybrid3d::calibrate::launch", rangePolicy(exec, 0, 1),
        KOKKOS_LAMBDA(const Index i) { x(i) += 1.0; });
    exec.fence();
    if (rep >= 100) seconds.push_back(MPI_Wtime() - t0);
  }
  return medianOverRanks(world, 1e6 * median(seconds));
}

}  // namespace hybrid3d::app::calibrate
