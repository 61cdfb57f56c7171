#pragma once
/// \file
/// The training loop of docs/design.md section 2: read this rank's subvolumes of the group's
/// samples
/// -> forward with halos -> loss -> backward with adjoint halos, gradient reductions started
/// per layer -> optimizer step -> metrics and checkpoints. Validation each epoch.
///
/// Every rank runs the same loop; the global mini-batch is split over the G data-parallel
/// groups (docs/design.md section 5) and every reduction makes the result independent of the grid.
/// A failure on any rank (bad file, NaN loss) throws the same message on every rank.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <hybrid3d/comm/GradientReducer.hpp>
#include <hybrid3d/data/BatchLoader.hpp>
#include <hybrid3d/data/Preprocess.hpp>
#include <hybrid3d/model/Models.hpp>
#include <hybrid3d/optim/Optimizer.hpp>
#include <hybrid3d/train/Checkpoint.hpp>
#include <hybrid3d/train/LossScale.hpp>
#include <hybrid3d/train/Metrics.hpp>
#include <hybrid3d/train/ReplicatedStateShards.hpp>
#include <hybrid3d/train/TrainConfig.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
class Trainer {
  HYBRID3D_ASSERT_SPACE(MemorySpace);

public:
  using execution_space = typename MemorySpace::execution_space;

  /// Collective over grid.worldComm(): builds the model, the optimizer and the data loaders,
  /// and restores config.restartFrom if given.
  Trainer(const ProcessGrid& grid, const TrainConfig& config);
  ~Trainer();

  /// Trains to config.epochs (or config.maxSteps); writes checkpoints, the metrics CSV and a
  /// summary. Returns the summary of the last epoch. A SIGTERM or SIGUSR1 while it runs stops
  /// every rank after the same step with a checkpoint (Preemption.hpp): then the summary's
  /// stoppedBySignal names the signal.
  EpochSummary run();

  /// One optimizer step on the loader's next mini-batch; returns the (global) mean loss.
  double step();
  /// Forward and backward on the loader's next mini-batch, gradients summed over the world, no
  /// update (what `hybrid3d gradients` reports; with StateSharding::Gradients only this rank's
  /// parts of the sums are, in the optimizer's parameters). Returns the loss.
  double forwardBackward();
  /// Parameters and buffers from a checkpoint or weights file (optimizer state untouched).
  void loadWeights(const std::string& path);
  /// Validation pass over the whole validation set, every sample exactly once whatever its size
  /// and the validation mini-batch (no update); empty summary without one.
  EvalSummary evaluate();

  void saveCheckpoint(const std::string& path) const;
  std::string checkpointPath() const { return config_.outputDir + "/checkpoint.h5"; }
  Model<T, MemorySpace>& model() { return model_; }
  long long steps() const { return step_; }
  /// Steps skipped for an overflow under half's loss scaling (train/LossScale.hpp), and S.
  long long skippedSteps() const { return lossScale_.skippedSteps(); }
  double lossScale() const { return lossScale_.scale(); }
  /// What the restart changed that is safe (one line each, RunIdentity.hpp); empty otherwise.
  const std::vector<std::string>& restartNotes() const { return restartNotes_; }

private:
  struct Data;  // a loader with its preprocessing
  // One call of run(), split into its phases (Trainer.cpp).
  struct Session;
  // Half: the summed gradients divided by the loss scale; false when some rank's overflowed
  // (the step is then skipped). Always true otherwise.
  bool unscaleGradients();
  // Forward, and the task's loss (and dL/d(output)) against the truth loaded last.
  double lossAndGradient(bool withGradient);
  // The whole of `batch` into the model's input and its task's truth.
  void load(Data& d, const data::HostBatch& batch);
  // Slots [first, first + real) of `batch` into model slots [0, real); the model's other slots
  // get zero input and truth (padding of a short validation batch).
  void loadSlots(Data& d, const data::HostBatch& batch, int first, int real);
  // A checkpoint's parameters, buffers and optimizer state (of a sharded optimizer, this rank's
  // parts). Collective.
  RunState readCheckpointWhole(const std::string& path);
  // Which engine and kernel path each layer with a choice runs (rank 0, at start-up).
  void printImplementations();

  const ProcessGrid& grid_;
  TrainConfig config_;
  // The instance every kernel of the run is issued to, made once: constructing a Kokkos 4 host
  // instance allocates (a shared-pointer control block), which a step must not.
  execution_space exec_;
  Model<T, MemorySpace> model_;
  // Parameters, gradients, their sums and the optimizer in float for the 16-bit activations.
  std::unique_ptr<Optimizer<ParamOf<T>, MemorySpace>> optimizer_;
  std::unique_ptr<GradientReducer<ParamOf<T>, MemorySpace>> reducer_;
  // Which part of each parameter this rank updates (all of it unless state is sharded).
  std::unique_ptr<ReplicatedStateShards<ParamOf<T>, MemorySpace>> shards_;
  LossScale lossScale_;  // half only: S, its clean-step count, the steps skipped
  std::unique_ptr<Data> train_, validation_;
  std::map<std::string, std::string> identity_;  // RunIdentity, stored in checkpoints
  std::vector<std::string> restartNotes_;
  long long step_ = 0;
  int epoch_ = 0;
  bool staged_ = false;  // some layers run on other grids (redistributions in the step)
  // The training batch of the step in progress (for the diagnosis of a non-finite loss).
  const data::HostBatch* batch_ = nullptr;
  long long restartStep_ = -1;          // the step run() began at after a restart
  std::vector<Index> previousSamples_;  // the last finished step's slots (HostBatch::samples)
  double previousLoss_ = 0;
};

extern template class Trainer<float, DefaultMemorySpace>;
extern template class Trainer<double, DefaultMemorySpace>;
extern template class Trainer<bfloat16, DefaultMemorySpace>;
extern template class Trainer<float16, DefaultMemorySpace>;

}  // namespace hybrid3d
