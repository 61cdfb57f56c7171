#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/optim/Adam.hpp>
#include <hybrid3d/optim/LearningRateSchedule.hpp>
#include <hybrid3d/optim/Sgd.hpp>

namespace hybrid3d::test {
namespace {

// Two parameters with random values; gradients are redrawn every step.
struct Problem {
  std::vector<NamedParameter<double>> params;
  std::vector<std::vector<double>> value;  // host copies the reference updates
  std::mt19937_64 rng{7};
  Problem() {
    for (int i = 0; i < 2; ++i) {
      auto p = createParameter<double>("layer" + std::to_string(i), "weight", {3, 4});
      auto h = Kokkos::create_mirror_view(p.value);
      std::uniform_real_distribution<double> u(-1, 1);
      for (std::size_t j = 0; j < h.size(); ++j) h(j) = u(rng);
      Kokkos::deep_copy(p.value, h);
      value.emplace_back(h.data(), h.data() + h.size());
      params.push_back({"layer" + std::to_string(i), p});
    }
  }
  std::vector<std::vector<double>> newGradients() {
    std::vector<std::vector<double>> g;
    std::normal_distribution<double> n(0, 1);
    for (auto& p : params) {
      auto h = Kokkos::create_mirror_view(p.param.grad);
      for (std::size_t j = 0; j < h.size(); ++j) h(j) = n(rng);
      Kokkos::deep_copy(p.param.grad, h);
      g.emplace_back(h.data(), h.data() + h.size());
    }
    return g;
  }
  double maxDifference() const {
    double d = 0;
    for (std::size_t i = 0; i < params.size(); ++i) {
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), params[i].param.value);
      for (std::size_t j = 0; j < h.size(); ++j) d = std::max(d, std::abs(h(j) - value[i][j]));
    }
    return d;
  }
};

TEST(Sgd, MatchesTorchSgdWithMomentumNesterovAndWeightDecay) {
  for (bool nesterov : {false, true}) {
    Problem pb;
    SgdOptions o;
    o.momentum = 0.9;
    o.weightDecay = 1e-2;
    o.nesterov = nesterov;
    o.dampening = nesterov ? 0.0 : 0.1;
    Sgd<double> sgd(pb.params, o);
    std::vector<std::vector<double>> buf(2);
    for (int step = 0; step < 5; ++step) {
      const double lr = 0.1 / (step + 1);
      const auto g = pb.newGradients();
      sgd.step(DefaultExecutionSpace(), lr);
      for (int i = 0; i < 2; ++i) {  // torch.optim.SGD, written out
        buf[i].resize(g[i].size());
        for (std::size_t j = 0; j < g[i].size(); ++j) {
          double d = g[i][j] + o.weightDecay * pb.value[i][j];
          buf[i][j] = step == 0 ? d : o.momentum * buf[i][j] + (1 - o.dampening) * d;
          d = o.nesterov ? d + o.momentum * buf[i][j] : buf[i][j];
          pb.value[i][j] -= lr * d;
        }
      }
    }
    EXPECT_LT(pb.maxDifference(), 1e-14);
    EXPECT_EQ(sgd.state().size(), 2u);
    EXPECT_EQ(sgd.state()[1].first, "layer1/weight/momentum_buffer");
  }
}

TEST(Adam, MatchesTorchAdamAndAdamW) {
  for (bool decoupled : {false, true}) {
    Problem pb;
    AdamOptions o;
    o.weightDecay = 0.05;
    o.decoupled = decoupled;
    Adam<double> adam(pb.params, o);
    std::vector<std::vector<double>> m(2), v(2);
    for (int step = 1; step <= 6; ++step) {
      const double lr = 1e-2;
      const auto g = pb.newGradients();
      adam.step(DefaultExecutionSpace(), lr);
      for (int i = 0; i < 2; ++i) {  // torch.optim.Adam / AdamW, written out
        m[i].resize(g[i].size());
        v[i].resize(g[i].size());
        for (std::size_t j = 0; j < g[i].size(); ++j) {
          double d = g[i][j];
          if (decoupled)
            pb.value[i][j] *= 1 - lr * o.weightDecay;
          else
            d += o.weightDecay * pb.value[i][j];
          m[i][j] = o.beta1 * m[i][j] + (1 - o.beta1) * d;
          v[i][j] = o.beta2 * v[i][j] + (1 - o.beta2) * d * d;
          const double mhat = m[i][j] / (1 - std::pow(o.beta1, step));
          const double vhat = v[i][j] / (1 - std::pow(o.beta2, step));
          pb.value[i][j] -= lr * mhat / (std::sqrt(vhat) + o.eps);
        }
      }
    }
    EXPECT_LT(pb.maxDifference(), 1e-12);
    EXPECT_EQ(adam.steps(), 6);
  }
}

TEST(Optimizer, RejectsOutOfRangeOptions) {
  Problem pb;
  SgdOptions s;
  s.momentum = 1.5;
  EXPECT_THROW(Sgd<double>(pb.params, s), Error);
  s.momentum = 0;
  s.nesterov = true;
  EXPECT_THROW(Sgd<double>(pb.params, s), Error);
  AdamOptions a;
  a.beta2 = 1.0;
  EXPECT_THROW(Adam<double>(pb.params, a), Error);
}

TEST(LearningRateSchedule, WarmupRampsLinearlyToTheBaseRate) {
  LearningRateSchedule s;
  s.baseRate = 0.4;
  s.warmupEpochs = 2;
  const long long spe = 5;
  for (long long step = 0; step < 10; ++step)
    EXPECT_DOUBLE_EQ(s.rate(step, spe), 0.4 * (step + 1) / 10.0);
  EXPECT_DOUBLE_EQ(s.rate(10, spe), 0.4);
  EXPECT_DOUBLE_EQ(s.rate(1000, spe), 0.4);
}

TEST(LearningRateSchedule, StepDecayMultipliesAtEachListedEpoch) {
  LearningRateSchedule s;
  s.baseRate = 1.0;
  s.kind = LearningRateSchedule::Kind::StepDecay;
  s.decayEpochs = {2, 4};
  s.decayFactor = 0.5;
  const long long spe = 3;
  EXPECT_DOUBLE_EQ(s.rate(2 * spe - 1, spe), 1.0);
  EXPECT_DOUBLE_EQ(s.rate(2 * spe, spe), 0.5);
  EXPECT_DOUBLE_EQ(s.rate(4 * spe - 1, spe), 0.5);
  EXPECT_DOUBLE_EQ(s.rate(4 * spe, spe), 0.25);
}

TEST(LearningRateSchedule, CosineGoesFromBaseToMinimumMonotonically) {
  LearningRateSchedule s;
  s.baseRate = 0.1;
  s.minRate = 0.001;
  s.kind = LearningRateSchedule::Kind::Cosine;
  s.warmupEpochs = 1;
  s.totalEpochs = 11;
  const long long spe = 4;
  EXPECT_DOUBLE_EQ(s.rate(spe, spe), 0.1);
  EXPECT_NEAR(s.rate(6 * spe, spe), 0.5 * (0.1 + 0.001), 1e-15);  // half way: the mean
  EXPECT_DOUBLE_EQ(s.rate(11 * spe, spe), 0.001);
  for (long long step = spe; step < 11 * spe; ++step) EXPECT_LE(s.rate(step + 1, spe), s.rate(step, spe));
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
