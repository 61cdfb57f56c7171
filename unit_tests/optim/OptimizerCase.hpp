#pragma once
// One optimiser reference case of unit_tests/reference (make_optimizer_references.py): PyTorch's
// settings, initial values, per-step gradients and rates, and every parameter and state buffer
// after every step; plus the replay of the same steps through a hybrid3d optimiser and the
// elementwise comparison of the two.

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/optim/Optimizer.hpp>

namespace hybrid3d::test {

// The parameters every case holds, in the order they are handed to the optimiser. `small` has
// gradients of about 1e-7, where Adam's eps is not negligible.
inline const std::vector<std::string>& caseParameters() {
  static const std::vector<std::string> names{"weight", "small"};
  return names;
}

struct OptimizerCase {
  std::string file, op;
  int steps = 0;
  std::vector<double> lr;                           // [step]
  std::map<std::string, std::vector<Index>> shape;  // per parameter, PyTorch's
  // "<param>/<dataset>" -> row-major values; per-step datasets are [step, ...].
  std::map<std::string, std::vector<double>> data;
  data::File h5;

  explicit OptimizerCase(const std::string& name)
      : file(std::string(HYBRID3D_TEST_DATA_DIR) + "/optimizers/" + name), h5(file) {
    op = h5.attributeString("op");
    steps = int(h5.attributeNumber("steps"));
    lr = h5.read<double>("lr");
    for (const std::string& p : caseParameters()) {
      shape[p] = h5.shape(p + "/initial");
      for (const char* d : {"initial", "grad", "value", "momentum_buffer", "exp_avg", "exp_avg_sq"})
        if (h5.hasDataset(p + "/" + d)) data[p + "/" + d] = h5.read<double>(p + "/" + d);
    }
  }
  double setting(const std::string& key) const { return h5.attributeNumber(key); }
  std::size_t size(const std::string& p) const {
    std::size_t n = 1;
    for (Index e : shape.at(p)) n *= std::size_t(e);
    return n;
  }
  // Row `step` of the per-step dataset `p/name`.
  std::vector<double> at(const std::string& p, const std::string& name, int step) const {
    const std::vector<double>& all = data.at(p + "/" + name);
    const std::size_t n = size(p);
    return {all.begin() + std::ptrdiff_t(n * std::size_t(step)),
            all.begin() + std::ptrdiff_t(n * std::size_t(step + 1))};
  }
};

// Elementwise |a - b| <= rtol * (|b| + floor * max|b|). The floor is there for entries that
// p - lr * d cancels to almost nothing, where a rounding of the operands is a large relative
// error; it is a fraction of the tensor's largest entry, so small entries still count.
inline void expectClose(const std::vector<double>& actual, const std::vector<double>& expected,
                        double rtol, double floor, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double scale = 0;
  for (double e : expected) scale = std::max(scale, std::abs(e));
  std::size_t bad = 0, worst = 0;
  double worstRatio = 0;
  for (std::size_t j = 0; j < expected.size(); ++j) {
    const double allowed = rtol * (std::abs(expected[j]) + floor * scale);
    const double ratio = std::abs(actual[j] - expected[j]) / allowed;
    if (!(ratio <= 1)) ++bad;
    if (!(ratio <= worstRatio)) {
      worstRatio = ratio;
      worst = j;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << expected.size()
                     << " entries differ; worst [" << worst << "] " << actual[worst]
                     << " vs PyTorch " << expected[worst];
}

template <class T>
std::vector<double> toHost(const Kokkos::View<T*, DefaultMemorySpace>& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.size());
}

template <class T>
void fromHost(const Kokkos::View<T*, DefaultMemorySpace>& v, const std::vector<double>& values) {
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t j = 0; j < values.size(); ++j) h(j) = static_cast<T>(values[j]);
  Kokkos::deep_copy(v, h);
}

template <class T>
using OptimizerFactory =
    std::function<std::unique_ptr<Optimizer<T>>(const std::vector<NamedParameter<T>>&)>;

// Replays the case's gradients and rates through optimisers made by `make` and compares every
// parameter and every state buffer with PyTorch's after every step. With `resumeAt` > 0 the
// run stops after that many steps and a fresh optimiser, given the first one's state and step
// count as a checkpoint restores them, takes the remaining steps.
template <class T>
void replayAndCompare(const OptimizerCase& c, const OptimizerFactory<T>& make, double rtol,
                      double floor, int resumeAt = 0) {
  std::vector<NamedParameter<T>> params;
  for (const std::string& p : caseParameters()) {
    params.push_back({"layer", createParameter<T>("layer", p, c.shape.at(p))});
    fromHost(params.back().param.value, c.data.at(p + "/initial"));
  }
  std::unique_ptr<Optimizer<T>> opt = make(params);
  for (int step = 0; step < c.steps; ++step) {
    if (resumeAt > 0 && step == resumeAt) {
      std::unique_ptr<Optimizer<T>> resumed = make(params);
      const auto from = opt->state(), to = resumed->state();
      ASSERT_EQ(from.size(), to.size());
      for (std::size_t i = 0; i < from.size(); ++i) Kokkos::deep_copy(to[i].second, from[i].second);
      resumed->setSteps(opt->steps());
      opt = std::move(resumed);
    }
    for (std::size_t i = 0; i < params.size(); ++i)
      fromHost(params[i].param.grad, c.at(caseParameters()[i], "grad", step));
    opt->step(DefaultExecutionSpace(), c.lr[std::size_t(step)]);
    const std::string where = c.file + " step " + std::to_string(step + 1) + " ";
    for (std::size_t i = 0; i < params.size(); ++i) {
      const std::string& p = caseParameters()[i];
      expectClose(toHost(params[i].param.value), c.at(p, "value", step), rtol, floor,
                  where + p + " value");
    }
    std::size_t compared = 0;
    for (const auto& [path, view] : opt->state()) {
      // path = "layer/<param>/<state>", the case's dataset is "<param>/<state>".
      const std::string key = path.substr(path.find('/') + 1);
      ASSERT_EQ(c.data.count(key), 1u) << where << "state " << path << " is not in PyTorch's";
      const std::string p = key.substr(0, key.find('/'));
      expectClose(toHost(view), c.at(p, key.substr(key.find('/') + 1), step), rtol, floor,
                  where + key);
      ++compared;
    }
    // Every state buffer PyTorch keeps is kept (and so checkpointed) by hybrid3d too.
    std::size_t torchStates = 0;
    for (const auto& entry : c.data) {
      const std::string d = entry.first.substr(entry.first.find('/') + 1);
      if (d != "initial" && d != "grad" && d != "value") ++torchStates;
    }
    EXPECT_EQ(compared, torchStates) << where << "state buffers";
    EXPECT_EQ(opt->steps(), step + 1);
  }
}

}  // namespace hybrid3d::test
