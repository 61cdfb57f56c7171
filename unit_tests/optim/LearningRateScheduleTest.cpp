// LearningRateSchedule gives, step by step, the rates of the PyTorch schedulers it mirrors
// (unit_tests/reference/lr_*.h5, make_optimizer_references.py: LinearLR warm-up, MultiStepLR,
// LinearLR then CosineAnnealingLR), plus what PyTorch's numbers do not show.

#include <string>

#include <gtest/gtest.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/optim/LearningRateSchedule.hpp>

namespace hybrid3d::test {
namespace {

void expectScheduleMatches(const std::string& name) {
  const data::File f(std::string(HYBRID3D_TEST_DATA_DIR) + "/optimizers/" + name);
  ASSERT_EQ(f.attributeString("op"), "lr_schedule");
  LearningRateSchedule s;
  s.kind = LearningRateSchedule::parseKind(f.attributeString("kind"));
  s.baseRate = f.attributeNumber("base_rate");
  if (f.hasAttribute("warmup_epochs")) s.warmupEpochs = f.attributeNumber("warmup_epochs");
  if (f.hasAttribute("decay_factor")) s.decayFactor = f.attributeNumber("decay_factor");
  if (f.hasAttribute("total_epochs")) s.totalEpochs = f.attributeNumber("total_epochs");
  if (f.hasAttribute("min_rate")) s.minRate = f.attributeNumber("min_rate");
  if (f.hasAttribute("decay_epochs")) {
    // A 1-D attribute: read with the C API (File reads scalar attributes only).
    data::Handle a(H5Aopen(f.id(), "decay_epochs", H5P_DEFAULT), H5Aclose);
    data::Handle space(H5Aget_space(a), H5Sclose);
    s.decayEpochs.resize(std::size_t(H5Sget_simple_extent_npoints(space)));
    ASSERT_GE(H5Aread(a, H5T_NATIVE_DOUBLE, s.decayEpochs.data()), 0);
  }
  s.validate();
  const long long spe = (long long)f.attributeNumber("steps_per_epoch");
  const std::vector<double> lr = f.read<double>("lr");
  ASSERT_GT(lr.size(), 0u);
  for (std::size_t step = 0; step < lr.size(); ++step)
    EXPECT_NEAR(s.rate((long long)step, spe), lr[step], 1e-12 * lr[step])
        << name << " step " << step;
}

TEST(LearningRateSchedule, WarmupMatchesPyTorchLinearLR) {
  expectScheduleMatches("lr_warmup_constant.h5");
}

TEST(LearningRateSchedule, StepDecayMatchesPyTorchMultiStepLR) {
  expectScheduleMatches("lr_step_decay.h5");
}

TEST(LearningRateSchedule, WarmupThenCosineMatchesPyTorchSequentialLR) {
  expectScheduleMatches("lr_warmup_cosine.h5");
}

// PyTorch's CosineAnnealingLR turns back up after T_max; hybrid3d's schedule stays at the
// minimum (a run longer than the schedule must not speed up again).
TEST(LearningRateSchedule, CosineStaysAtTheMinimumAfterItsLength) {
  LearningRateSchedule s;
  s.baseRate = 0.1;
  s.minRate = 0.001;
  s.kind = LearningRateSchedule::Kind::Cosine;
  s.totalEpochs = 3;
  const long long spe = 4;
  for (long long step = 0; step < 3 * spe; ++step)
    EXPECT_LE(s.rate(step + 1, spe), s.rate(step, spe));
  for (long long step = 3 * spe; step < 10 * spe; ++step) EXPECT_EQ(s.rate(step, spe), 0.001);
}

// Decay epochs need not be whole epochs: the rate drops at the first step at or past them.
TEST(LearningRateSchedule, StepDecayAtAFractionalEpoch) {
  LearningRateSchedule s;
  s.baseRate = 1.0;
  s.kind = LearningRateSchedule::Kind::StepDecay;
  s.decayEpochs = {1.5};
  s.decayFactor = 0.5;
  EXPECT_EQ(s.rate(5, 4), 1.0);  // epoch 1.25
  EXPECT_EQ(s.rate(6, 4), 0.5);  // epoch 1.5
}

TEST(LearningRateSchedule, ValidationNamesTheProblem) {
  LearningRateSchedule s;
  s.kind = LearningRateSchedule::Kind::StepDecay;
  s.decayEpochs = {3, 2};
  EXPECT_THROW(s.validate(), Error);
  EXPECT_THROW(LearningRateSchedule::parseKind("linear"), Error);
  EXPECT_EQ(LearningRateSchedule::parseKind("cosine"), LearningRateSchedule::Kind::Cosine);
}

}  // namespace
}  // namespace hybrid3d::test
