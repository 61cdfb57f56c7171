#pragma once
/// \file
/// The plan of a training run without the run: the layout (data-parallel groups x spatial
/// grid), the model as shapes (ModelPlan: per layer output, local boxes, ghost widths,
/// parameters), what each spatial rank holds (GraphMemory, predicted without allocating), and
/// the batches (samples, mini-batches, steps per epoch for training and validation, as the
/// trainer's BatchPlan makes them). `hybrid3d check DECK` and `hybrid3d train DECK --dry-run`
/// print it; a planner evaluates it for other layouts.
///
/// planRun is pure (no MPI, no file access): it takes the sets' sizes. checkRun is the dry run
/// on the ranks at hand: it lists the datasets and checks every sample file's metadata as a
/// run would, reading no sample contents.

#include <string>
#include <utility>
#include <vector>

#include <hybrid3d/core/Precision.hpp>
#include <hybrid3d/data/SampleReader.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/model/ModelPlan.hpp>
#include <hybrid3d/train/TrainConfig.hpp>

namespace hybrid3d {

/// One dataset as listed: where it comes from and how many samples it holds.
struct SetListing {
  std::string source;  // directory, list file, "command line", or where it will be generated
  Index samples = 0;
};

/// How a set is cut into mini-batches (data::BatchPlan's rules).
struct SetPlan {
  SetListing listing;
  int batch = 0;                   // global mini-batch of this set
  int localBatch = 0;              // slots per data-parallel group
  Index steps = 0;                 // mini-batches per epoch
  bool keepsPartialBatch = false;  // validation: every sample once, the last batch partial
};

struct RunPlan {
  int world = 1, groups = 1;
  Int3 grid{1, 1, 1};
  Precision precision = Precision::Float;
  ModelPlan model;
  int optimizerStates = 0;  // state values per parameter value (Adam 2, SGD with momentum 1)
  StateSharding stateSharding = StateSharding::None;  // train/ReplicatedStateShards.hpp
  bool prefetch = true;        // the next mini-batch is read while this one computes
  std::size_t cacheBytes = 0;  // per rank, for the subvolumes read (0: no cache)
  bool log1p = false;          // the preprocessing takes log(1 + x) of the stored values
  int epochs = 1;
  long long totalSteps = 0;  // over all epochs, capped by maxSteps
  SetPlan train;
  SetPlan validation;  // listing.samples == 0: none
  /// What each spatial rank's model holds, indexed by spatial rank (the groups repeat it);
  /// plan/RankMemory.hpp adds the rest a rank holds.
  std::vector<GraphMemory> memory;
  /// What a process holds besides (plan/RankMemory.hpp), measured: the machine file's
  /// Rank/fixed memory MiB in bytes; 0: unknown (no machine file, or one without it).
  double fixedMemoryBytes = 0;

  /// Spatial ranks holding the least and the most in total.
  int smallestRank() const;
  int largestRank() const;
};

/// Plans `config` for `groups` x `grid` ranks in precision T on MemorySpace. Throws the one line
/// a run on that layout would (checkTrainConfig, the model's shape checks, the batches'
/// checks). `validation.samples == 0` when there is no validation set.
template <class T, class MemorySpace = DefaultMemorySpace>
RunPlan planRun(const TrainConfig& config, const Int3& grid, int groups, const SetListing& train,
                const SetListing& validation);

/// The most any rank of `groups` x `grid` holds for the model in precision T before the engines'
/// workspaces (predictMemoryBeforeEngines; no engine is asked anything), after
/// checkTrainConfig: what a dry run checks against the node's memory before it plans the
/// engines.
template <class T, class MemorySpace = DefaultMemorySpace>
std::size_t largestRankBytesBeforeEngines(const TrainConfig& config, const Int3& grid, int groups);

/// The data part of the dry run, for any layout: lists the datasets as the trainer does (one
/// rank, broadcast), checks each set's size against the mini-batch of `groups` groups and every
/// sample file's metadata against `spec` (the files spread over `world`'s ranks; no sample
/// contents read). A listing given (non-empty source) is taken as it is. Collective over `world`.
std::pair<SetListing, SetListing> checkDatasets(MPI_Comm world, const TrainConfig& config,
                                                int groups, const data::SampleSpec& spec,
                                                const SetListing& train = {},
                                                const SetListing& validation = {});

/// The dry run on `grid`'s world: checks the configuration, lists the datasets as the trainer
/// does (one rank, broadcast), checks each sample file's metadata against the model (the files
/// spread over the ranks; no sample contents read), then planRun. Collective; an error on any
/// rank is thrown on every rank. `train`/`validation` given (non-empty source): sets that do not
/// exist yet (a deck that generates its data), taken as listed.
template <class T, class MemorySpace = DefaultMemorySpace>
RunPlan checkRun(const ProcessGrid& grid, const TrainConfig& config, const SetListing& train = {},
                 const SetListing& validation = {});

}  // namespace hybrid3d
