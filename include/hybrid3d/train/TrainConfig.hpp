#pragma once
/// \file
/// Everything a training run needs, as plain values. The input deck fills it (apps/deck); tests
/// and other front ends fill it directly.

#include <cstdint>
#include <string>
#include <vector>

#include <hybrid3d/data/BatchLoader.hpp>
#include <hybrid3d/model/Models.hpp>
#include <hybrid3d/optim/Adam.hpp>
#include <hybrid3d/optim/LearningRateSchedule.hpp>
#include <hybrid3d/optim/Sgd.hpp>
#include <hybrid3d/train/LossScale.hpp>

namespace hybrid3d {

struct DataConfig {
  std::string train;                    // directory of sample files or a list file
  std::vector<std::string> trainFiles;  // or the files themselves (then `train` is ignored)
  std::string validation;               // empty: no validation
  data::ReadMode readMode = data::ReadMode::Independent;
  data::LayoutChoice layout = data::LayoutChoice::Auto;  // of the input files (InputLayout.hpp)
  std::string targetsDataset;  // HDF5 dataset of the targets; empty: the model's (/unitPar)
  bool prefetch = true;
  std::size_t cacheBytes = 0;
  bool shuffle = true;
  bool log1p = false;                 // applied while loading (the model may also have its own)
  std::vector<double> channelScale;   // empty: none
  std::vector<double> channelOffset;  // subtracted before scaling; empty: none
  /// `auto`: the training set's per-channel mean (offset) and 1 / standard deviation (scale),
  /// computed before step 1 and cached beside the data (train/InputStatistics.hpp); the
  /// list above is then unused.
  bool channelOffsetAuto = false;
  bool channelScaleAuto = false;
};

/// Which replicated state is sharded over the ranks that hold copies of it
/// (train/ReplicatedStateShards.hpp): none; the optimizer's state (ZeRO stage 1: gradients summed
/// whole, each rank updates its part of each parameter); also the summed gradients (stage 2: a
/// reduce-scatter leaves each rank only its part of the sum). Parameters are whole again before
/// the next forward either way.
enum class StateSharding { None, Optimizer, Gradients };

/// "none", "optimizer", "gradients" (the deck key's words); anything else throws naming it.
StateSharding parseStateSharding(const std::string& word);
const char* toString(StateSharding s);

struct TrainConfig {
  /// The process grid (data-parallel groups G, spatial grid) is not here: the caller makes the
  /// ProcessGrid the trainer runs on (the deck's DeckRun::spatialGrid, deck/TrainDeck.hpp).
  ModelOptions model;  // model.batch is set by groupModelOptions (below)
  DataConfig data;
  int globalBatch = 1;
  /// Samples per validation mini-batch over all groups; 0: globalBatch. Any value >= 1 (every
  /// validation sample is evaluated once whatever N mod B is); the model evaluates a group's part
  /// globalBatch / G samples at a time, the size its activations were allocated for.
  int validationBatch = 0;
  int epochs = 1;
  std::string optimizer = "sgd";  // sgd | adam
  SgdOptions sgd;
  AdamOptions adam;
  LearningRateSchedule schedule;
  /// Runs in half only (train/LossScale.hpp): the trainer sets `enabled` from its precision.
  LossScaleOptions lossScale;
  StateSharding stateSharding = StateSharding::None;
  std::string outputDir = "hybrid3d_run";  // checkpoints and metrics
  /// Checkpoints (outputDir/checkpoint.h5, overwritten) are written at every epoch end, on
  /// preemption (Preemption.hpp), at the end, and besides:
  long long checkpointEvery = 0;  // every this many steps; 0: not by step count
  double checkpointMinutes = 30;  // when this much wall time passed since the last; 0: off
  int printEvery = 1;             // steps between progress lines
  std::string restartFrom;        // checkpoint to continue from ("" : start fresh)
  /// A run that is not a restart into an output directory holding an earlier run's checkpoint or
  /// metrics: refused, or with `overwrite` the old files are kept under a dated name
  /// (OutputDirectory.hpp).
  bool overwrite = false;
  /// The checkpoint's history (RunState::history) with this restart's changes, stored in every
  /// checkpoint this run writes.
  std::string history;
  /// Seconds a rank may wait for the others in one collective before every rank is stopped
  /// with a line naming the operation (CollectiveWatchdog.hpp, Preemption.hpp); <= 0: forever.
  double collectiveTimeoutSeconds = 600;
  long long maxSteps = -1;  // stop after this many steps (for tests); < 0: no limit
  std::string deckText;     // stored in checkpoints
  /// Tests only: raise testSignal (SIGTERM unless set) in-process once this many steps are done,
  /// on this world rank (-1: every rank), so that a preemption, a crash (SIGKILL) or a stopped
  /// rank (SIGSTOP) lands at a known step. -1: never.
  long long testSignalStep = -1;
  int testSignalRank = 0;
  int testSignal = 15;  // SIGTERM
};

/// Whether the mini-batch splits into `groups` equal positive parts: the data loader gives every
/// data-parallel group as many samples a step (data::BatchPlan), and a group's model is built for
/// that many.
bool batchSplits(const TrainConfig& config, int groups);

/// The samples one of `groups` data-parallel groups takes of each mini-batch (globalBatch /
/// groups). Throws one line naming both when the mini-batch does not split (batchSplits).
int groupBatch(const TrainConfig& config, int groups);

/// config.model with its batch set to groupBatch: the model one group builds or plans.
ModelOptions groupModelOptions(const TrainConfig& config, int groups);

}  // namespace hybrid3d
