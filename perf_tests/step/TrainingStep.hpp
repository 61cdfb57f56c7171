#pragma once
// A training step as the trainer does it (src/train/Trainer.cpp), minus the loader, for the step
// benchmarks: the model with SGD over its parameters and a gradient reducer over the world, on
// synthetic data already on the device, the truth of every sample of the group loaded into the
// model's task.

#include <memory>
#include <random>
#include <type_traits>
#include <vector>

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>

#include <hybrid3d/comm/GradientReducer.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/model/Models.hpp>
#include <hybrid3d/optim/Sgd.hpp>

namespace hybrid3d::bench {

// T: the activations' type; parameters, SGD and the gradient sums in ParamOf<T> (float for
// the 16-bit types), as the trainer has them.
template <class T>
struct TrainingStepOf {
  using P = ParamOf<T>;
  Model<T> model;
  std::unique_ptr<Sgd<P>> sgd;
  std::unique_ptr<GradientReducer<P>> reducer;
  DefaultExecutionSpace exec;  // made once, as the trainer's: a Kokkos 4 host instance allocates
};
using TrainingStep = TrainingStepOf<float>;

// x := uniform in [0, 1). Kokkos draws no 16-bit type: those are drawn in float and rounded
// (overloads, not `if constexpr`: nvcc rejects a device lambda's first capture inside one).
template <class View, class Pool>
void fillUniform(const View& x, Pool& pool, std::false_type) {
  Kokkos::fill_random(x, pool, 0.0f, 1.0f);
}
template <class View, class Pool>
void fillUniform(const View& x, Pool& pool, std::true_type) {
  using T = typename View::value_type;
  Kokkos::View<float*, DefaultMemorySpace> drawn("hybrid3d::bench::input", x.span());
  Kokkos::fill_random(drawn, pool, 0.0f, 1.0f);
  T* const out = x.data();
  Kokkos::parallel_for(
      "hybrid3d::bench::roundInput", Kokkos::RangePolicy<DefaultExecutionSpace>(0, x.span()),
      KOKKOS_LAMBDA(const std::size_t i) { out[i] = T(drawn(i)); });
}

// The model of `o` (o.batch samples per group) on `grid`, ready to step: random inputs in
// [0, 1), targets in [-1, 1) per sample (the same on every rank of a group), labels in
// [0, outputs) of the voxels this rank owns.
template <class T = float>
std::unique_ptr<TrainingStepOf<T>> buildTrainingStep(const ProcessGrid& grid,
                                                     const ModelOptions& o) {
  using P = ParamOf<T>;
  auto s = std::make_unique<TrainingStepOf<T>>();
  s->model = buildModel<T>(grid, o);
  auto& g = *s->model.graph;
  s->sgd = std::make_unique<Sgd<P>>(g.parameters(), SgdOptions{});
  s->reducer =
      std::make_unique<GradientReducer<P>>(grid.worldComm(), grid.dataComm(), g.gradientsByNode());
  Kokkos::Random_XorShift64_Pool<DefaultExecutionSpace> pool(1234 + 17 * grid.worldRank());
  fillUniform(g.input().volume.view(), pool, std::bool_constant<isScalar16<T>>{});
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
template <class T>
double stepOnce(const ProcessGrid& grid, TrainingStepOf<T>& s, long long step, double lr) {
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
