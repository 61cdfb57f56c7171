// hybrid3d's SGD, Adam and AdamW reproduce torch.optim's parameters and state buffers after
// every step of the reference cases in unit_tests/reference (make_optimizer_references.py): to
// 1e-12 relative in double, and to float's precision in float. The optimisers have no distributed
// part (every rank applies the same update to the reduced gradient), so one rank tests them.

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include <hybrid3d/optim/Adam.hpp>
#include <hybrid3d/optim/Sgd.hpp>

#include "OptimizerCase.hpp"

namespace hybrid3d::test {
namespace {

// Double: rounding differences only. Float: inputs rounded to float, five steps of float
// arithmetic; 1e-6 is about 16 float epsilons, the worst entry measured about 3e-7.
constexpr double kDoubleTol = 1e-12, kFloatTol = 1e-6;
constexpr double kDoubleFloor = 1e-3, kFloatFloor = 1e-1;

SgdOptions sgdOptions(const OptimizerCase& c) {
  EXPECT_EQ(c.op, "sgd");
  SgdOptions o;
  o.momentum = c.setting("momentum");
  o.dampening = c.setting("dampening");
  o.weightDecay = c.setting("weight_decay");
  o.nesterov = c.setting("nesterov") != 0;
  return o;
}

AdamOptions adamOptions(const OptimizerCase& c) {
  EXPECT_TRUE(c.op == "adam" || c.op == "adamw") << c.op;
  AdamOptions o;
  o.beta1 = c.setting("beta1");
  o.beta2 = c.setting("beta2");
  o.eps = c.setting("eps");
  o.weightDecay = c.setting("weight_decay");
  o.decoupled = c.op == "adamw";
  return o;
}

template <class T>
OptimizerFactory<T> sgdFactory(const OptimizerCase& c) {
  const SgdOptions o = sgdOptions(c);
  return [o](const std::vector<NamedParameter<T>>& p) { return std::make_unique<Sgd<T>>(p, o); };
}

template <class T>
OptimizerFactory<T> adamFactory(const OptimizerCase& c) {
  const AdamOptions o = adamOptions(c);
  return [o](const std::vector<NamedParameter<T>>& p) { return std::make_unique<Adam<T>>(p, o); };
}

template <class T>
OptimizerFactory<T> factory(const OptimizerCase& c) {
  return c.op == "sgd" ? sgdFactory<T>(c) : adamFactory<T>(c);
}

const char* const kCases[] = {"sgd_momentum_dampening.h5", "sgd_nesterov.h5", "sgd_plain.h5",
                              "adam.h5", "adamw.h5"};

TEST(Optimizer, MatchesPyTorchEveryStepInDouble) {
  for (const char* file : kCases) {
    const OptimizerCase c(file);
    replayAndCompare<double>(c, factory<double>(c), kDoubleTol, kDoubleFloor);
  }
}

TEST(Optimizer, MatchesPyTorchEveryStepInFloat) {
  for (const char* file : kCases) {
    const OptimizerCase c(file);
    replayAndCompare<float>(c, factory<float>(c), kFloatTol, kFloatFloor);
  }
}

// A run resumed from a checkpoint (state buffers and step count, nothing else) continues as
// PyTorch's uninterrupted run: SGD must not take the resumed step for a first step, Adam must
// continue its bias correction.
TEST(Optimizer, ResumedFromItsStateMatchesPyTorch) {
  for (const char* file : kCases) {
    const OptimizerCase c(file);
    replayAndCompare<double>(c, factory<double>(c), kDoubleTol, kDoubleFloor, 2);
  }
}

}  // namespace
}  // namespace hybrid3d::test
