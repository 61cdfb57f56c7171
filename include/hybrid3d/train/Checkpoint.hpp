#pragma once
/// \file
/// Checkpoints and weight files (docs/design.md section 7, fixed layout):
/// ~~~
///   /model/<layer>/<param>            parameters and batch-norm buffers, PyTorch shapes
///   /optimizer/<layer>/<param>/<state> optimizer buffers (momentum_buffer, exp_avg, ...)
///   /optimizer/steps                  steps the optimizer has taken
///   /state/step, /state/epoch, /state/seed
///   root attribute "deck"             the input deck the run was started from
///   root attribute "identity"         the run's identity, "key=value" lines (RunState::identity)
///   root attribute "history"          the changes restarts made (RunState::history)
///   attribute "elementhash64" of each array  its checksum, verified on reading
/// ~~~
/// The file holds GLOBAL tensors whatever the grid or the sharding of the optimizer's state, so
/// a checkpoint written on one grid restarts on another. Every rank writes its own part of each
/// array straight into the one file (parallel HDF5, collective MPI-IO) and reads only its own
/// part back: no rank gathers a tensor it does not hold in training. Of the ranks holding the
/// same elements (a replicated parameter's: all; a column shard's (layers/Parameter.hpp): one
/// per data-parallel group) each writes a contiguous share (comm/ShardRange.hpp); a sharded
/// optimizer state is written by its holder. The checksum is a sum modulo 2^64 over the elements
/// of a hash of each element's global index and its stored bytes, so each rank computes its
/// share and the shares are added (train/impl/CheckpointParts.hpp). Files from before it carry
/// "fnv1a64" (FNV-1a 64 of the stored bytes in order) instead: still read, rank 0 reading each
/// whole array to check it. Batch-norm running statistics are replicated too, except with
/// statistics per spatial group: then the trainer hands in their mean over the data-parallel groups
/// (see meanOverGroups in Trainer.cpp), which a restart with any number of groups continues
/// exactly. A write goes to `"<path>.tmp"`, is flushed to disk and then renamed over `<path>`: a
/// crash at any moment leaves the previous checkpoint whole.

#include <map>
#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/comm/ShardRange.hpp>
#include <hybrid3d/optim/Optimizer.hpp>

namespace hybrid3d {

struct RunState {
  long long step = 0;   // optimizer steps taken
  long long epoch = 0;  // epochs completed
  unsigned long long seed = 0;
  std::string deck;  // the deck text, for provenance
  /// What the run was (architecture, mini-batch, seed, ...: train/RunIdentity.hpp), checked on
  /// restart. Keys and values are single lines without '='. Empty in files from before it.
  std::map<std::string, std::string> identity;
  /// One line per change a restart made to the deck ("restart at step 12: 'Training/momentum'
  /// 0.9 -> 0.5 (--allow-change)"), oldest first; empty in files from before it.
  std::string history;
};

template <class T, class M>
struct CheckpointContents {
  HYBRID3D_ASSERT_SPACE(M);
  std::vector<NamedParameter<T, M>> parameters;  // trained: /model/<layer>/<name>
  std::vector<NamedParameter<T, M>> buffers;     // not trained (running statistics)
  Optimizer<T, M>* optimizer = nullptr;          // may be null (weights-only files)
  /// An optimizer that holds only its part of each state (train/ReplicatedStateShards.hpp): for
  /// each of optimizer->state(), in its order, the range of its parameter's local elements
  /// (Parameter.hpp) that this rank's buffer holds, each element held by exactly one of the
  /// ranks holding the parameter. The file is the same whatever the sharding. Empty: each
  /// state holds all of its parameter's local elements.
  std::vector<ShardRange> optimizerStateParts = {};
};

/// Collective over `comm` (the world: every column of a sharded parameter must be on some rank of
/// it). Throws on every rank (with the path) if any rank could not write; a full disk is named
/// ("no space left on device", the bytes needed) and the temporary file removed.
template <class T, class M>
void writeCheckpoint(const std::string& path, MPI_Comm comm, const CheckpointContents<T, M>& c,
                     const RunState& state);

/// Collective over `comm`: fills every parameter, buffer and (if given) optimizer state from
/// the file; a missing dataset, a shape that differs from the model's or an array that does not
/// match its checksum is an error naming the file and the dataset. Returns the run state (zeros for
/// a weights-only file).
template <class T, class M>
RunState readCheckpoint(const std::string& path, MPI_Comm comm, const CheckpointContents<T, M>& c);

/// Collective over `comm`: the run state alone (no tensors), to check a restart before loading.
RunState readRunState(const std::string& path, MPI_Comm comm);

/// Plain float64 arrays for tools (`hybrid3d gradients`): world rank 0 writes them to `path`
/// through the same temporary-file-and-rename path; an error is thrown on every rank.
struct NamedArray {
  std::string name;  // absolute dataset path, e.g. "/grads/conv1/weight"
  std::vector<Index> shape;
  std::vector<double> values;
};
void writeArrays(const std::string& path, MPI_Comm comm, const std::vector<NamedArray>& arrays);

}  // namespace hybrid3d
