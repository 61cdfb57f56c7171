#pragma once
// Medians for the calibration: a machine file should hold what a rank typically gets, not its
// luckiest or unluckiest moment (a median is robust to one step that a daemon interrupted).

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <mpi.h>

namespace hybrid3d::app::calibrate {

// The middle value (the mean of the two middle ones for an even count); 0 when empty.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Every rank's `values` on every rank, in rank order (counts may differ between ranks).
inline std::vector<double> gatherAll(MPI_Comm comm, const std::vector<double>& values) {
  int size;
  MPI_Comm_size(comm, &size);
  int mine = static_cast<int>(values.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), offsets(counts.size(), 0);
  MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  for (std::size_t r = 1; r < counts.size(); ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  std::vector<double> all(static_cast<std::size_t>(offsets.back() + counts.back()));
  MPI_Allgatherv(values.data(), mine, MPI_DOUBLE, all.data(), counts.data(), offsets.data(),
                 MPI_DOUBLE, comm);
  return all;
}

// The median over the ranks of `comm` of one value each, on every rank.
inline double medianOverRanks(MPI_Comm comm, double value) {
  return median(gatherAll(comm, {value}));
}

// `v` to `digits` significant digits: a machine file's figures carry no more than their noise
// (medians of a few runs on a shared machine vary in the second or third digit already).
inline double significant(double v, int digits = 4) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return std::strtod(buf, nullptr);
}

}  // namespace hybrid3d::app::calibrate
