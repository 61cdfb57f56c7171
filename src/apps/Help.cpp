#include "Help.hpp"

#include <algorithm>

#include "Command.hpp"

namespace hybrid3d::app {

namespace {
bool isHelpFlag(const std::string& a) { return a == "--help" || a == "-h"; }
}  // namespace

Request classify(const std::vector<std::string>& argv) {
  Request r;
  // Kokkos's own options may stand anywhere; Kokkos takes them out of argv when it starts.
  std::vector<std::string> args;
  for (const std::string& a : argv) {
    if (a == "--kokkos-help") {
      r.kind = Request::Kind::KokkosHelp;
      return r;
    }
    if (a.rfind("--kokkos-", 0) != 0) args.push_back(a);
  }
  if (args.empty()) {
    r.kind = Request::Kind::Nothing;
    return r;
  }
  const auto& table = commands();
  if (isHelpFlag(args[0]) || args[0] == "help") {
    // `hybrid3d help train` reads as `hybrid3d train --help`.
    if (args[0] == "help" && args.size() > 1) {
      r.command = args[1];
      r.kind = table.count(args[1]) ? Request::Kind::CommandHelp : Request::Kind::Unknown;
    } else {
      r.kind = Request::Kind::Overview;
    }
    return r;
  }
  r.command = args[0];
  if (!table.count(args[0]))
    r.kind = Request::Kind::Unknown;
  else if (std::any_of(args.begin() + 1, args.end(), isHelpFlag))
    r.kind = Request::Kind::CommandHelp;
  return r;
}

void printOverview(std::FILE* to) {
  std::fprintf(to,
               "hybrid3d: trains 3D CNNs (CosmoFlow, 3D U-Net) with data x spatial parallelism.\n"
               "usage: mpirun -n N hybrid3d COMMAND [ARGS]\n\ncommands:\n");
  for (const auto& [name, info] : commands())
    std::fprintf(to, "  %-10s %s\n  %-10s   hybrid3d %s %s\n", name.c_str(),
                 info.help.summary.c_str(), "", name.c_str(), info.help.usage.c_str());
  std::fprintf(to,
               "\n`hybrid3d COMMAND --help` (or `hybrid3d help COMMAND`) shows a command's "
               "options and an example.\nKokkos options (--kokkos-threads=N, ...) pass through "
               "to Kokkos; --kokkos-help lists them.\n");
}

void printCommandHelp(const std::string& command, std::FILE* to) {
  const CommandHelp& h = commands().at(command).help;
  std::fprintf(to, "usage: mpirun -n N hybrid3d %s %s\n\n%s\n", command.c_str(), h.usage.c_str(),
               h.summary.c_str());
  if (!h.options.empty()) std::fprintf(to, "\noptions:\n%s", h.options.c_str());
  std::fprintf(to, "\nexample:\n  %s\n", h.example.c_str());
}

}  // namespace hybrid3d::app
