// Halo exchange benchmark: time and achieved bandwidth of Halo::gather and Halo::scatterAdd
// for a 64^3 x 16-channel float tensor with ghost width 1, against a plain MPI_Sendrecv of
// the same number of bytes measured in the same run (the ratio shows what packing, the
// neighbour collective and the zero padding cost over raw point-to-point transfer).
//
//   mpirun -n 2 build/bin/bench_halo_exchange [extent] [channels] [reps]
// Runs the grids 2x1x1 (D faces: contiguous slabs) and 1x1x2 (W faces: strided packing) on
// 2 ranks; with other rank counts, the D-split and W-split grids of that many ranks.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/core/MpiThreads.hpp>
#include <hybrid3d/comm/Halo.hpp>

#include "Timing.hpp"

using namespace hybrid3d;

namespace {

void run(const Int3& dims, Index extent, int channels, int reps) {
  ProcessGrid grid(MPI_COMM_WORLD, dims);
  const BlockDecomposition dec({extent, extent, extent}, dims);
  auto t = createDistTensor<float>("x", 1, channels, dec, grid.coords(), GhostWidths::uniform(1));
  Kokkos::deep_copy(t.view(), 1.0f);
  auto halo = createHalo(grid, t, "bench");
  DefaultExecutionSpace exec;

  Index bytes = halo->bytesSent();  // moved by all ranks together in one exchange
  MPI_Allreduce(MPI_IN_PLACE, &bytes, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  const bench::Stats gather = bench::timeCollective(MPI_COMM_WORLD, 5, reps, [&] {
    halo->gather(exec, t);
    exec.fence();
  });
  const bench::Stats scatter = bench::timeCollective(MPI_COMM_WORLD, 5, reps, [&] {
    halo->scatterAdd(exec, t);
    exec.fence();
  });

  // Baseline: every rank exchanges the bytes it sends in the halo with one partner, as one
  // contiguous message each way (no packing, no neighbour collective).
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int count = static_cast<int>(halo->bytesSent() / sizeof(float));
  std::vector<float> out(count, 1.0f), in(count);
  const int partner = rank ^ 1;
  const bool paired = partner < size;
  const bench::Stats sendrecv = bench::timeCollective(MPI_COMM_WORLD, 5, reps, [&] {
    if (paired)
      MPI_Sendrecv(out.data(), count, MPI_FLOAT, partner, 0, in.data(), count, MPI_FLOAT, partner,
                   0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  });

  if (rank == 0) {
    auto line = [&](const char* what, const bench::Stats& s) {
      std::printf("%-8s %-11s %10.1f %10.1f %10.1f %12.2f %9.2f\n", toString(dims).c_str(), what,
                  s.median * 1e6, s.min * 1e6, s.max * 1e6, bytes / s.median / 1e9,
                  s.median / sendrecv.median);
    };
    line("gather", gather);
    line("scatterAdd", scatter);
    line("sendrecv", sendrecv);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (const int rc = hybrid3d::initMpiWithThreads(&argc, &argv, "bench_halo_exchange")) return rc;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    const Index extent = argc > 1 ? std::atol(argv[1]) : 64;
    const int channels = argc > 2 ? std::atoi(argv[2]) : 16;
    const int reps = argc > 3 ? std::atoi(argv[3]) : 200;
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
      std::printf(
          "halo exchange: %lld^3 x %d float, ghost width 1, %d ranks, %d repetitions, "
          "execution space %s\n",
          static_cast<long long>(extent), channels, size, reps, DefaultExecutionSpace::name());
      std::printf(
          "bytes = all bytes sent by all ranks in one exchange; ratio = median time / "
          "MPI_Sendrecv median time of the same bytes\n");
      std::printf("%-8s %-11s %10s %10s %10s %12s %9s\n", "grid", "operation", "median_us",
                  "min_us", "max_us", "GB/s", "ratio");
    }
    run({size, 1, 1}, extent, channels, reps);
    run({1, 1, size}, extent, channels, reps);
  }
  MPI_Finalize();
  return 0;
}
