#include <cmath>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/optim/LearningRateSchedule.hpp>

namespace hybrid3d {

double LearningRateSchedule::rate(long long step, long long stepsPerEpoch) const {
  const double spe = static_cast<double>(stepsPerEpoch > 0 ? stepsPerEpoch : 1);
  const double warmupSteps = warmupEpochs * spe;
  // Warm-up counts the step being taken, so the first step already moves (1 / warm-up steps).
  if (step < warmupSteps) return baseRate * double(step + 1) / warmupSteps;
  const double epoch = double(step) / spe;
  switch (kind) {
    case Kind::Constant:
      return baseRate;
    case Kind::StepDecay: {
      double r = baseRate;
      for (double e : decayEpochs)
        if (epoch >= e) r *= decayFactor;
      return r;
    }
    case Kind::Cosine: {
      const double span = totalEpochs - warmupEpochs;
      const double x = span > 0 ? std::min(1.0, (epoch - warmupEpochs) / span) : 1.0;
      return minRate + 0.5 * (baseRate - minRate) * (1 + std::cos(M_PI * x));
    }
  }
  return baseRate;
}

void LearningRateSchedule::validate() const {
  if (!(baseRate > 0)) fail("learning rate: base rate ", baseRate, " must be positive");
  if (warmupEpochs < 0) fail("learning rate: negative warm-up ", warmupEpochs);
  if (kind == Kind::StepDecay) {
    if (!(decayFactor > 0 && decayFactor <= 1))
      fail("learning rate: decay factor ", decayFactor, " outside (0, 1]");
    for (std::size_t i = 0; i < decayEpochs.size(); ++i)
      if (decayEpochs[i] < 0 || (i > 0 && decayEpochs[i] <= decayEpochs[i - 1]))
        fail("learning rate: decay epochs must be non-negative and increasing");
  }
  if (kind == Kind::Cosine) {
    if (!(totalEpochs > warmupEpochs))
      fail("learning rate: cosine length ", totalEpochs, " must exceed the warm-up ", warmupEpochs);
    if (minRate < 0 || minRate > baseRate)
      fail("learning rate: minimum ", minRate, " outside [0, base rate]");
  }
}

LearningRateSchedule::Kind LearningRateSchedule::parseKind(const std::string& name) {
  if (name == "constant") return Kind::Constant;
  if (name == "step") return Kind::StepDecay;
  if (name == "cosine") return Kind::Cosine;
  fail("learning rate: unknown schedule \"", name, "\" (constant, step or cosine)");
}

}  // namespace hybrid3d
