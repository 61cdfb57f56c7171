#pragma once
// `hybrid3d predict`'s command line (docs/predict.md): what to apply, to what, where to write.
#include <optional>
#include <string>
#include <vector>

#include <hybrid3d/core/Precision.hpp>
#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::app {

struct PredictOptions {
  std::string checkpoint;              // --checkpoint RUN/checkpoint.h5
  std::vector<std::string> inputs;     // --in PATH...: sample files, NIfTI files, directories
  std::string out;                     // --out DIR
  std::string labels;                  // --labels DIR: NIfTI label files named as the inputs
  std::optional<Int3> grid;            // --grid DxHxW; empty: auto
  std::optional<Precision> precision;  // --precision; empty: the checkpoint's
  bool probabilities = false;          // --probabilities
  bool overwrite = false;              // --overwrite
  bool cubes = false;                  // --cubes: a row per W^3 cube as well (regression)
  double memoryLimit = 0;  // --memory-limit GiB per rank, as bytes; 0: the node's memory
};

std::string predictUsage();

/// The words after `hybrid3d predict`; one-line errors naming the option.
PredictOptions parsePredictOptions(const std::vector<std::string>& args);

}  // namespace hybrid3d::app
