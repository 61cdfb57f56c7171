#pragma once
// What `hybrid3d --help`, `hybrid3d help [COMMAND]` and `hybrid3d COMMAND --help` print: the
// program's own usage, built from the commands' registrations. Decided from argv before Kokkos
// starts, because Kokkos::initialize answers --help itself (its own option list) and leaves the
// flag in argv.

#include <cstdio>
#include <string>
#include <vector>

namespace hybrid3d::app {

// What the command line asks for before any command runs (--kokkos-* words ignored, except
// --kokkos-help: Kokkos's option list).
struct Request {
  enum class Kind { Run, Overview, CommandHelp, KokkosHelp, Unknown, Nothing } kind = Kind::Run;
  std::string command;  // Run, CommandHelp: the command; Unknown: the word given
};
Request classify(const std::vector<std::string>& args);

// Every command with its one-line summary and usage, then how to get more.
void printOverview(std::FILE* to);
// One command: usage, summary, options, an example.
void printCommandHelp(const std::string& command, std::FILE* to);

}  // namespace hybrid3d::app
