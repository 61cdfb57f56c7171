#pragma once
// A training step as the trainer does it (src/train/Trainer.cpp), minus the loader, for the step
// benchmarks: the model with SGD over its parameters and a gradient reducer over the world, on
// synthetic data already on the device, the truth of every sample of the group loaded into the
// model's task.

#include <memory>
#include <random>
#include <vector>

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>

#include <hybrid3d/comm/GradientReducer.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/model/Models.hpp>
#include <hybrid3d/optim/Sgd.hpp>

namespace hybrid3d::bench {

struct TrainingStep {
  using T = float;
  Model<T> model;
  std::unique_ptr<Sgd<T>> sgd;
  std::unique_ptr<GradientReducer<T>> reducer;
  DefaultExecutionSpace exec;  // made once, as the trainer's: a Kokkos 4 host instance allocates
};

// The model of `o` (o.batch samples per group) on `grid`, ready to step: random inputs in
// [0, 1), targets in [-1, 1) per sample (the same on every rank of a group), labels in
// [0, outputs) of the voxels this rank owns.
inline std::unique_ptr<TrainingStep> buildTrainingStep(const ProcessGrid& grid,
                                                       const ModelOptions& o) {
  auto s = std::make_unique<TrainingStep>();
  s->model = buildModel<float>(grid, o);
  auto& g = *s->model.graph;
  s->sgd = std::make_unique<Sgd<float>>(g.parameters(), SgdOptions{});
  s->reducer = std::make_unique<GradientReducer<float>>(grid.worldComm(), grid.dataComm(),
                                                        g.gradientsByNode());
  Kokkos::Random_XorShift64_Pool<DefaultExecutionSpace> pool(1234 + 17 * grid.worldRank());
  Kokkos::fill_random(g.input().volume.view(), pool, 0.0f, 1.0f);
  std::mt19937 targetStream(99 + grid.group()), labelStream(1234 + 17 * grid.worldRank());
  const int B = o.batch, F = s->model.outputs;
  std::vector<float> targets(std::size_t(B) * std::size_t(F));
  for (float& t : targets) t = std::uniform_real_distribution<float>(-1, 1)(targetStream);
  const std::size_t owned = std::size_t(g.input().volume.owned().size());
  std::vector<int> labels(std::size_t(B) * owned);
  for (int& l : labels) l = std::uniform_int_distribution<int>(0, F - 1)(labelStream);
  s->model.task->load(s->exec, {targets.data(), std::size_t(F), labels.data(), owned}, 0, B);
  g.setTraining(true);
  Kokkos::fence();
  return s;
}

// One training step as Trainer::step does it: dropout keyed by the step and the group's first
// global sample, zeroed gradients, forward, loss and its gradient, backward starting each
// layer's reduction as soon as it is done, wait for the reductions, SGD update.
inline double stepOnce(const ProcessGrid& grid, TrainingStep& s, long long step, double lr) {
  const auto& exec = s.exec;
  auto& g = *s.model.graph;
  g.setStep(step, static_cast<std::int64_t>(grid.group()) * g.inputShape().batch);
  g.zeroGradients(exec);
  g.forward(exec);
  const double loss = s.model.task->loss(exec, g, true);
  g.backward(exec, s.reducer.get());
  s.reducer->finish();
  s.sgd->step(exec, lr);
  exec.fence();
  return loss;
}

}  // namespace hybrid3d::bench
