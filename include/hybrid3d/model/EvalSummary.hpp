#pragma once
/// \file
/// The result of a validation pass, as the metrics file and the epoch line report it: the loss
/// over every evaluated sample and the metrics of the model's task (Task.hpp fills them: MSE and
/// MAE for regression, in total and per target; voxel accuracy and per-class Dice for
/// segmentation).

#include <string>
#include <vector>

namespace hybrid3d {

struct EvalSummary {
  bool present = false;
  long long samples = 0;  // samples evaluated: the whole validation set
  /// loss: the training loss's definition over every sample (MSE over samples and targets;
  /// cross-entropy over samples and voxels).
  double loss = 0, mse = 0, mae = 0, accuracy = 0;
  std::vector<double> dice;       // per class
  std::vector<double> targetMse;  // per regression target (a resolution study asks which one)
  /// "loss 0.12 mse 0.12 mae 0.28 target mse 0.01/0.2/0.3/0.04" / "... dice 0.9/0.7/0.2 ..."
  std::string describe() const;
};

/// "0.9/0.7/0.2": per-class and per-target values as one CSV field and one word of a log line.
std::string slashSeparated(const std::vector<double>& values, int precision);

}  // namespace hybrid3d
