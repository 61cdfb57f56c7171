#pragma once
// Subcommands of the `hybrid3d` program. Each lives in its own file and registers itself:
//   static const hybrid3d::app::Registration reg{"refcheck", "DIR [--grid DxHxW]", runRefcheck};
// main() has already initialised MPI and Kokkos; a command returns the exit code, and throws
// hybrid3d::Error for a user-facing failure (main prints it and exits non-zero on every rank).

#include <map>
#include <string>
#include <vector>

namespace hybrid3d::app {

using CommandFn = int (*)(const std::vector<std::string>& args);

struct CommandInfo {
  std::string usage;
  CommandFn run;
};

inline std::map<std::string, CommandInfo>& commands() {
  static std::map<std::string, CommandInfo> table;
  return table;
}

struct Registration {
  Registration(const std::string& name, const std::string& usage, CommandFn run) {
    commands()[name] = {usage, run};
  }
};

}  // namespace hybrid3d::app
