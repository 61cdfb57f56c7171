#pragma once
// Timing for MPI benchmarks: each repetition starts after a barrier and counts the slowest
// rank; the median of the repetitions is reported (robust to the noise of a shared machine),
// with the minimum and maximum beside it to show that noise.

#include <algorithm>
#include <functional>
#include <vector>

#include <mpi.h>

namespace hybrid3d::bench {

struct Stats {
  double median, min, max;  // seconds
};

inline Stats timeCollective(MPI_Comm comm, int warmup, int reps, const std::function<void()>& op) {
  for (int i = 0; i < warmup; ++i) op();
  std::vector<double> t(reps);
  for (int i = 0; i < reps; ++i) {
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    op();
    double dt = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, comm);
    t[i] = dt;
  }
  std::sort(t.begin(), t.end());
  return {t[reps / 2], t.front(), t.back()};
}

}  // namespace hybrid3d::bench
