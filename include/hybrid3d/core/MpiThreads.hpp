#pragma once
/// \file
/// MPI start-up with the thread support hybrid3d needs, asked for and checked (the command's
/// main and the unit tests' main).
///
/// Only the main thread calls MPI. Kokkos's host threads (OpenMP) run kernels, which make no MPI
/// call; the data loader's prefetch thread (io/Prefetcher.hpp) reads samples with HDF5's POSIX
/// driver and makes none either (the loader initialises HDF5, whose parallel build registers an
/// MPI attribute, on the main thread first). So MPI_THREAD_FUNNELED is the level needed.
/// Collective (MPI-IO) reads on the prefetch thread would need MPI_THREAD_MULTIPLE; the loader
/// refuses that combination with its own message unless MPI happens to provide it.

#include <cstdio>

#include <mpi.h>

namespace hybrid3d {

inline constexpr int requiredMpiThreadLevel = MPI_THREAD_FUNNELED;

inline const char* mpiThreadLevelName(int level) {
  if (level == MPI_THREAD_SINGLE) return "MPI_THREAD_SINGLE";
  if (level == MPI_THREAD_FUNNELED) return "MPI_THREAD_FUNNELED";
  if (level == MPI_THREAD_SERIALIZED) return "MPI_THREAD_SERIALIZED";
  if (level == MPI_THREAD_MULTIPLE) return "MPI_THREAD_MULTIPLE";
  return "an unknown MPI thread level";
}

/// MPI_Init_thread asking for requiredMpiThreadLevel. Returns 0 when every rank was given at
/// least that level. Otherwise rank 0 prints one line naming both levels, every rank finalises
/// MPI, and the exit status for main to return (1) comes back.
inline int initMpiWithThreads(int* argc, char*** argv, const char* program) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(argc, argv, requiredMpiThreadLevel, &provided);
  // Agree over the world, so that every rank stops (or none does) even if the levels differ.
  int least = provided;
  MPI_Allreduce(&provided, &least, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (least >= requiredMpiThreadLevel) return 0;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0)
    std::fprintf(stderr, "%s: MPI provides only %s, hybrid3d needs %s\n", program,
                 mpiThreadLevelName(least), mpiThreadLevelName(requiredMpiThreadLevel));
  MPI_Finalize();
  return 1;
}

}  // namespace hybrid3d
