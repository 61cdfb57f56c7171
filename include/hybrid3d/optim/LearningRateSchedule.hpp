#pragma once
/// \file
/// Learning rate as a function of the step: an optional linear warm-up, then constant, step
/// decay at given epochs, or cosine annealing. Pure host arithmetic, identical on every rank.

#include <string>
#include <vector>

namespace hybrid3d {

struct LearningRateSchedule {
  enum class Kind { Constant, StepDecay, Cosine };

  double baseRate = 1e-3;
  Kind kind = Kind::Constant;
  double warmupEpochs = 0;          // linear ramp from baseRate / warm-up steps to baseRate
  std::vector<double> decayEpochs;  // StepDecay: multiply by decayFactor at each of these
  double decayFactor = 0.1;
  double totalEpochs = 1;  // Cosine: length of the annealing (after warm-up)
  double minRate = 0;      // Cosine: rate at totalEpochs

  /// Rate for step `step` (0-based) of a run with `stepsPerEpoch` steps per epoch.
  double rate(long long step, long long stepsPerEpoch) const;
  /// Throws naming the bad field (negative rate, decay epochs not increasing, ...).
  void validate() const;
  static Kind parseKind(const std::string& name);  // "constant", "step", "cosine"
};

}  // namespace hybrid3d
