// Options PyTorch would refuse are refused with an Error, before any step.

#include <gtest/gtest.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/optim/Adam.hpp>
#include <hybrid3d/optim/Sgd.hpp>

namespace hybrid3d::test {
namespace {

TEST(Optimizer, RejectsOutOfRangeOptions) {
  std::vector<NamedParameter<double>> params{
      {"layer", createParameter<double>("layer", "weight", {3, 4})}};
  SgdOptions s;
  s.momentum = 1.5;
  EXPECT_THROW(Sgd<double>(params, s), Error);
  s.momentum = 0;
  s.nesterov = true;
  EXPECT_THROW(Sgd<double>(params, s), Error);
  s.momentum = 0.9;
  s.dampening = 0.1;  // Nesterov with dampening
  EXPECT_THROW(Sgd<double>(params, s), Error);
  AdamOptions a;
  a.beta2 = 1.0;
  EXPECT_THROW(Adam<double>(params, a), Error);
  a.beta2 = 0.999;
  a.eps = 0;
  EXPECT_THROW(Adam<double>(params, a), Error);
  // A buffer without a gradient is not something to optimise.
  std::vector<NamedParameter<double>> buffer{
      {"bn", createParameter<double>("bn", "running_mean", {4}, false)}};
  EXPECT_THROW(Sgd<double>(buffer, SgdOptions{}), Error);
}

}  // namespace
}  // namespace hybrid3d::test
