#include <hybrid3d/train/PeakMemory.hpp>

#include <sys/resource.h>

namespace hybrid3d {

double peakResidentBytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) * 1024;  // KiB on Linux
}

PeakOverRanks peakResidentOverRanks(MPI_Comm comm) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  struct {
    double bytes;
    int rank;
  } mine{peakResidentBytes(), rank}, most{};
  MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
  PeakOverRanks p;
  p.largest = most.bytes;
  p.largestRank = most.rank;
  MPI_Allreduce(&mine.bytes, &p.smallest, 1, MPI_DOUBLE, MPI_MIN, comm);
  return p;
}

}  // namespace hybrid3d
