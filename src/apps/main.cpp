// The hybrid3d command: `mpirun -n N hybrid3d SUBCOMMAND ARGS...`.
// Order of start-up: MPI (with the thread level hybrid3d needs, core/MpiThreads.hpp), then the help
// and unknown-command answers (before Kokkos, which would answer --help with its own option list),
// then Kokkos; an error on any rank ends the run on every rank with one line and a non-zero exit,
// never a hang (ErrorExit.hpp).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/MpiThreads.hpp>

#include "Command.hpp"
#include "ErrorExit.hpp"
#include "Help.hpp"

namespace {

// Answers what needs no command run (help, unknown command) on rank 0; returns the exit code,
// or -1 to go on and run the command.
int answerWithoutRunning(const hybrid3d::app::Request& request, int rank) {
  using Kind = hybrid3d::app::Request::Kind;
  switch (request.kind) {
    case Kind::Run:
    case Kind::KokkosHelp:
      return -1;
    case Kind::Overview:
      if (rank == 0) hybrid3d::app::printOverview(stdout);
      return 0;
    case Kind::CommandHelp:
      if (rank == 0) hybrid3d::app::printCommandHelp(request.command, stdout);
      return 0;
    case Kind::Unknown:
      if (rank == 0) {
        std::fprintf(stderr, "hybrid3d: unknown command '%s'\n\n", request.command.c_str());
        hybrid3d::app::printOverview(stderr);
      }
      return 2;
    case Kind::Nothing:
      if (rank == 0) hybrid3d::app::printOverview(stderr);
      return 2;
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (const int code = hybrid3d::initMpiWithThreads(&argc, &argv, "hybrid3d")) return code;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const hybrid3d::app::Request request =
      hybrid3d::app::classify(std::vector<std::string>(argv + 1, argv + argc));
  int code = answerWithoutRunning(request, rank);
  if (code < 0) {
    code = 0;
    const hybrid3d::app::ErrorExit errorExit;
    Kokkos::ScopeGuard kokkos(argc, argv);  // prints its option list for --kokkos-help
    if (request.kind == hybrid3d::app::Request::Kind::Run) {
      // Kokkos has removed its --kokkos-* options from argv: the command is argv[1].
      std::vector<std::string> args(argv + 2, argv + argc);
      const std::string& name = request.command;
      try {
        code = hybrid3d::app::commands().at(name).run(args);
      } catch (const hybrid3d::WorldError& e) {
        code = errorExit.end(name, e.what(), /*everyRankThrew=*/true);
      } catch (const std::exception& e) {
        // One line and a clean exit when every rank failed; else this rank's line and abort.
        code = errorExit.end(name, e.what(), /*everyRankThrew=*/false);
      }
    }
  }
  MPI_Finalize();
  return code;
}
