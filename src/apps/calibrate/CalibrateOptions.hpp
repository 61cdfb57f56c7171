#pragma once
// The command line of `hybrid3d calibrate` (Calibrate.cpp has its help text).

#include <string>
#include <vector>

namespace hybrid3d::app::calibrate {

struct CalibrateOptions {
  std::string out;                 // the machine file written
  std::string name;                // empty: --base's name, else the host's name
  std::string base;                // a machine file whose figures fill what is not measured
  std::vector<std::string> decks;  // training decks whose models' layers are timed
  std::vector<int> sizes;          // input widths; empty: each deck's own
  int steps = 3;                   // timed training steps per model (after one warm-up)
  std::string scratch;             // where the file-system probe writes; empty: out's folder
  int fileMiB = 256;               // the file-system probe's file per rank
  std::string commandLine;         // as given, for the file's header
};

// Throws hybrid3d::Error "calibrate: ..." naming the option; `ranks`: the world's size.
CalibrateOptions parseCalibrateOptions(const std::vector<std::string>& args, int ranks);

}  // namespace hybrid3d::app::calibrate
