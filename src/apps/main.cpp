// The hybrid3d command: `mpirun -n N hybrid3d SUBCOMMAND ARGS...`.
// Order of start-up: MPI, then Kokkos; a hybrid3d::Error from any rank ends the run on every
// rank with the message and a non-zero exit, never a hang.
#include <cstdio>
#include <exception>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/core/Error.hpp>

#include "Command.hpp"

namespace {

void usage() {
  std::fprintf(stderr, "usage: mpirun -n N hybrid3d COMMAND [ARGS]\ncommands:\n");
  for (const auto& [name, info] : hybrid3d::app::commands())
    std::fprintf(stderr, "  %s %s\n", name.c_str(), info.usage.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    std::vector<std::string> args(argv + 1, argv + argc);
    const auto& table = hybrid3d::app::commands();
    if (args.empty() || table.find(args[0]) == table.end()) {
      if (rank == 0) {
        if (!args.empty() && args[0] != "--help" && args[0] != "-h")
          std::fprintf(stderr, "hybrid3d: unknown command '%s'\n", args[0].c_str());
        usage();
      }
      code = args.empty() || (args[0] != "--help" && args[0] != "-h") ? 2 : 0;
    } else {
      const std::string name = args[0];
      args.erase(args.begin());
      try {
        code = table.at(name).run(args);
      } catch (const std::exception& e) {
        // One line, from the rank that failed. A failure that struck some ranks only must not
        // leave the others waiting in a collective: abort the whole job.
        std::fprintf(stderr, "hybrid3d %s: error on rank %d: %s\n", name.c_str(), rank, e.what());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
  }
  MPI_Finalize();
  return code;
}
