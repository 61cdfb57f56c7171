// The regression task (Tasks.hpp): MseLoss over the model's output features [N, F] and the
// samples' targets; validation sums the squared and absolute errors of the real samples, the
// squared ones per target too. On a layer grid a rank holds the output of its sub-grid's
// samples (grid/LayerGrid.hpp): the group's samples k, k + S, ...
#include <algorithm>
#include <cmath>
#include <vector>

#include <mpi.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/layers/MseLoss.hpp>
#include <hybrid3d/model/Tasks.hpp>

namespace hybrid3d {

namespace {

template <class T, class M>
class Regression final : public Task<T, M> {
public:
  using typename Task<T, M>::execution_space;
  using typename Task<T, M>::graph_type;

  explicit Regression(const TaskLayout& layout)
      : grid_(layout.output),
        loss_(layout.output, "loss", layout.shape.batch, layout.shape.channels),
        targets_("hybrid3d::Regression::targets", layout.shape.batch, layout.shape.channels),
        targetsHost_(Kokkos::create_mirror_view(targets_)),
        predictionHost_("hybrid3d::Regression::predictionHost", layout.shape.batch,
                        layout.shape.channels),
        targetSquaredError_(std::size_t(layout.shape.channels), 0.0) {}

  void load(const execution_space& exec, const HostTruth& truth, int first, int real) override {
    const int L = int(targets_.extent(0)), F = int(targets_.extent(1));
    if (real > 0 && truth.targetsPerSlot != std::size_t(F))
      fail("regression: the samples hold ", truth.targetsPerSlot, " targets, the model ", F);
    for (int n = 0; n < L; ++n) {
      const int j = grid_.groupSample(n);  // the group's slot of local sample n
      for (int f = 0; f < F; ++f)
        targetsHost_(n, f) =
            j < real ? static_cast<T>(truth.targets[std::size_t(first + j) * F + f]) : T(0);
    }
    Kokkos::deep_copy(exec, targets_, targetsHost_);
  }

  double loss(const execution_space& exec, const graph_type& graph, bool withGradient) override {
    const auto& prediction = graph.output().features;
    const double l = loss_.forward(exec, prediction, targets_);
    if (withGradient)
      loss_.backward(exec, prediction, targets_, graph.outputGradient().features,
                     this->gradientScale_);
    return l;
  }

  void clearMetrics() override {
    squaredError_ = absoluteError_ = values_ = 0;
    std::fill(targetSquaredError_.begin(), targetSquaredError_.end(), 0.0);
  }

  // Predictions are replicated on a sub-grid's ranks: each rank sums its sub-grid's samples.
  void addMetrics(const execution_space& exec, const graph_type& graph, int real) override {
    Kokkos::deep_copy(exec, predictionHost_, graph.output().features);
    exec.fence();
    for (int n = 0; n < grid_.localBatch(real); ++n)
      for (std::size_t f = 0; f < predictionHost_.extent(1); ++f) {
        const double e = double(predictionHost_(n, f)) - double(targetsHost_(n, f));
        squaredError_ += e * e;
        targetSquaredError_[f] += e * e;
        absoluteError_ += std::abs(e);
        values_ += 1;
      }
  }

  // Summed over the ranks of one position of the output's grid (the values are replicated
  // within a sub-grid): every sub-grid of every group, each sample once. Collective over the
  // world, as every rank is in one such communicator.
  void summarize(const ProcessGrid&, EvalSummary& s) override {
    std::vector<double> sums{squaredError_, absoluteError_, values_};
    sums.insert(sums.end(), targetSquaredError_.begin(), targetSquaredError_.end());
    MPI_Allreduce(MPI_IN_PLACE, sums.data(), int(sums.size()), MPI_DOUBLE, MPI_SUM,
                  grid_.dataComm());
    if (sums[2] > 0) {
      s.mse = sums[0] / sums[2];
      s.mae = sums[1] / sums[2];
      s.loss = s.mse;
      const double samples = sums[2] / double(targetSquaredError_.size());
      s.targetMse.clear();
      for (std::size_t f = 0; f < targetSquaredError_.size(); ++f)
        s.targetMse.push_back(sums[3 + f] / samples);
    }
  }

private:
  LayerGrid grid_;  // the output's
  MseLoss<T, M> loss_;
  FeatureView<T, M> targets_;
  typename FeatureView<T, M>::HostMirror targetsHost_;
  Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace> predictionHost_;
  double squaredError_ = 0, absoluteError_ = 0, values_ = 0;
  std::vector<double> targetSquaredError_;  // per target, over the evaluated samples
};

SampleFields fields(int outputs) { return {"/full", "", "/unitPar", outputs, 0}; }

}  // namespace

const TaskKind& regressionTask() {
  static const TaskKind kind{"regression", fields, taskMakers<Regression>()};
  return kind;
}

}  // namespace hybrid3d
