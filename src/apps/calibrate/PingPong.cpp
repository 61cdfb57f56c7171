// MPI ping-pong between world ranks 0 and 1 (Probes.hpp).
#include <vector>

#include <hybrid3d/core/Error.hpp>

#include "Probes.hpp"
#include "Statistics.hpp"

namespace hybrid3d::app::calibrate {

namespace {

// Seconds of each of `rounds` round trips of `bytes` each way, on rank 0 (rank 1 echoes), after
// `warmup` untimed ones that set up the connection and its buffers.
std::vector<double> roundTrips(MPI_Comm world, std::vector<char>& buffer, int rounds, int warmup) {
  int rank;
  MPI_Comm_rank(world, &rank);
  const int n = static_cast<int>(buffer.size());
  std::vector<double> seconds;
  for (int i = 0; i < warmup + rounds; ++i) {
    if (rank == 0) {
      const double t0 = MPI_Wtime();
      MPI_Send(buffer.data(), n, MPI_CHAR, 1, 0, world);
      MPI_Recv(buffer.data(), n, MPI_CHAR, 1, 0, world, MPI_STATUS_IGNORE);
      if (i >= warmup) seconds.push_back(MPI_Wtime() - t0);
    } else if (rank == 1) {
      MPI_Recv(buffer.data(), n, MPI_CHAR, 0, 0, world, MPI_STATUS_IGNORE);
      MPI_Send(buffer.data(), n, MPI_CHAR, 0, 0, world);
    }
  }
  return seconds;
}

}  // namespace

PingPong pingPong(MPI_Comm world) {
  int rank, size;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  if (size < 2) fail("calibrate: the network needs two ranks (mpirun -n 2 or more)");
  std::vector<char> small(8), large(std::size_t(16) << 20, 1);
  MPI_Barrier(world);
  const std::vector<double> shortTrips = roundTrips(world, small, 1000, 100);
  const std::vector<double> longTrips = roundTrips(world, large, 20, 3);
  // A round trip is two one-way messages.
  double figures[2] = {0, 0};
  if (rank == 0) {
    figures[0] = 1e6 * median(shortTrips) / 2;
    figures[1] = 1e-9 * double(large.size()) / (median(longTrips) / 2);
  }
  MPI_Bcast(figures, 2, MPI_DOUBLE, 0, world);
  return {figures[0], figures[1]};
}

}  // namespace hybrid3d::app::calibrate
