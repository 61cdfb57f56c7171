#include "ErrorExit.hpp"

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace hybrid3d::app {

namespace {

// True when every rank of `comm` enters this call within `seconds` (a non-blocking barrier,
// polled: a rank that never comes must not keep this one waiting).
bool everyRankArrives(MPI_Comm comm, double seconds) {
  MPI_Request request;
  MPI_Ibarrier(comm, &request);
  const double deadline = MPI_Wtime() + seconds;
  int done = 0;
  for (;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done || MPI_Wtime() > deadline) return done != 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Collective: whether every rank's `text` equals rank 0's.
bool sameEverywhere(MPI_Comm comm, const std::string& text) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  int length = static_cast<int>(text.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, comm);
  std::vector<char> first(text.begin(), text.end());
  first.resize(static_cast<std::size_t>(length));
  MPI_Bcast(first.data(), length, MPI_CHAR, 0, comm);
  int same = std::string(first.begin(), first.end()) == text ? 1 : 0, all = 0;
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, comm);
  return all != 0;
}

}  // namespace

ErrorExit::ErrorExit() { MPI_Comm_dup(MPI_COMM_WORLD, &comm_); }

ErrorExit::~ErrorExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

int ErrorExit::end(const std::string& command, const std::string& message,
                   bool everyRankThrew) const {
  int rank;
  MPI_Comm_rank(comm_, &rank);
  if (!everyRankArrives(comm_, everyRankThrew ? waitSecondsForWorldError : waitSeconds)) {
    std::fprintf(stderr, "hybrid3d %s: error on rank %d: %s\n", command.c_str(), rank,
                 message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  // Every rank failed: one line, from rank 0, naming a rank only when they disagree.
  const bool same = sameEverywhere(comm_, message);
  if (rank == 0) {
    if (same)
      std::fprintf(stderr, "hybrid3d %s: error: %s\n", command.c_str(), message.c_str());
    else
      std::fprintf(stderr, "hybrid3d %s: error on rank 0 (others failed differently): %s\n",
                   command.c_str(), message.c_str());
    std::fflush(stderr);
  }
  return 1;
}

}  // namespace hybrid3d::app
