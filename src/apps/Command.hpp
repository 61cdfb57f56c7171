#pragma once
// Subcommands of the `hybrid3d` program. Each lives in its own file and registers itself with
// its help:
//   static const hybrid3d::app::Registration reg{"refcheck", {"DIR [--grid DxHxW]",
//       "one line: what it does", "  --grid DxHxW  ...\n", "mpirun -n 2 hybrid3d refcheck d"},
//       runRefcheck};
// main() has already initialised MPI and Kokkos; a command returns the exit code, and throws
// hybrid3d::Error for a user-facing failure (main prints it and exits non-zero on every rank).
// `hybrid3d --help` and `hybrid3d COMMAND --help` print the help (Help.hpp) before Kokkos starts.

#include <map>
#include <string>
#include <vector>

namespace hybrid3d::app {

using CommandFn = int (*)(const std::vector<std::string>& args);

struct CommandHelp {
  std::string usage;    // the arguments after the command's name
  std::string summary;  // one line: what the command does
  std::string options;  // one "  --flag VALUE   meaning" line per option ('\n'-terminated)
  std::string example;  // one complete command line
};

struct CommandInfo {
  CommandHelp help;
  CommandFn run;
};

inline std::map<std::string, CommandInfo>& commands() {
  static std::map<std::string, CommandInfo> table;
  return table;
}

struct Registration {
  Registration(const std::string& name, CommandHelp help, CommandFn run) {
    commands()[name] = {std::move(help), run};
  }
};

}  // namespace hybrid3d::app
