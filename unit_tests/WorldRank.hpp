#pragma once
// This rank's number in MPI_COMM_WORLD and the world's size, for tests of any part.

#include <mpi.h>

namespace hybrid3d::test {

inline int worldSize() {
  int n;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

inline int worldRank() {
  int r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

}  // namespace hybrid3d::test
