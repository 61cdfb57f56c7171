#pragma once
/// \file
/// What a rank's memory reached: the process's peak resident set (getrusage's ru_maxrss, which
/// counts the pages touched, whatever allocated them: the model, MPI, the libraries, the
/// program). `train` prints it at its end beside what the plan predicts (plan/RankMemory.hpp);
/// `calibrate` measures the fixed cost of a process with it.

#include <mpi.h>

namespace hybrid3d {

/// This process's peak resident memory so far, in bytes.
double peakResidentBytes();

struct PeakOverRanks {
  double largest = 0, smallest = 0;  // bytes
  int largestRank = 0;               // the rank of `comm` reaching `largest`
};

/// Every rank's peakResidentBytes(), the largest and the smallest. Collective over `comm`.
PeakOverRanks peakResidentOverRanks(MPI_Comm comm);

}  // namespace hybrid3d
