#pragma once
/// \file
/// Replicated state sharded (ZeRO stages 1 and 2, as PyTorch's FSDP with SHARD_GRAD_OP): every
/// rank that holds a copy of a parameter (the ranks its gradient is summed over,
/// comm/GradientScope.hpp: the whole world, spatial groups and data-parallel replicas together,
/// for a replicated parameter; the replicas of a column shard for the first dense layer's
/// weight) updates only its contiguous part of it (comm/ShardRange.hpp), so the optimizer's
/// state exists once over those ranks instead of on each; the parameter is gathered whole
/// again right after the step, before the next forward needs it.
///
///   StateSharding::Optimizer  the gradients are summed whole (allreduce) and each rank's
///                             optimizer reads its part of the sum (stage 1);
///   StateSharding::Gradients  the reduce-scatter leaves each rank only its part of the sum
///                             (comm/GradientReducer.hpp, ReduceTo::Shards: stage 2).
///   StateSharding::None       everything whole, as without this class.
///
/// The arithmetic per element is the unsharded optimizer's, so a sharded run equals the
/// unsharded one up to the order of the gradient sums' additions (the allreduce's and the
/// reduce-scatter's, both MPI's). Checkpoints stay whole without a gather: each rank writes and
/// reads its parts of the state where the whole would be (stateParts(), train/Checkpoint.hpp).

#include <string>
#include <utility>
#include <vector>

#include <hybrid3d/comm/GradientReducer.hpp>
#include <hybrid3d/comm/ShardRange.hpp>
#include <hybrid3d/core/OwnedComm.hpp>
#include <hybrid3d/core/StagingSpace.hpp>
#include <hybrid3d/optim/Optimizer.hpp>
#include <hybrid3d/train/TrainConfig.hpp>

namespace hybrid3d {

/// Stage: whether MPI is handed host copies (by default what MemorySpace and the build need; a
/// parameter only so that tests can run the staged path on the host).
template <class T, class MemorySpace = DefaultMemorySpace,
          bool Stage = mpiStagesThroughHost<MemorySpace>>
class ReplicatedStateShards {
  HYBRID3D_ASSERT_SPACE(MemorySpace);

public:
  using view = Kokkos::View<T*, MemorySpace>;
  using execution_space = typename MemorySpace::execution_space;

  /// `parameters`: the model's trained parameters (Graph::parameters()); `reducer`: their
  /// gradients' reducer, built with ReduceTo::Shards for StateSharding::Gradients and Whole
  /// otherwise. Collective over `world` (its and `dataParallel`'s duplicates are owned).
  ReplicatedStateShards(StateSharding mode, MPI_Comm world, MPI_Comm dataParallel,
                        const std::vector<NamedParameter<T, MemorySpace>>& parameters,
                        const GradientReducer<T, MemorySpace, Stage>& reducer);

  StateSharding mode() const { return mode_; }
  /// What the optimizer is built on and updates: each parameter's part of its value and of its
  /// summed gradient (the whole of both with StateSharding::None).
  const std::vector<NamedParameter<T, MemorySpace>>& optimizerParameters() const { return parts_; }
  /// The gradients of optimizerParameters() (what loss scaling unscales).
  const std::vector<view>& optimizerGradients() const { return gradients_; }

  /// After the optimizer step issued to `exec`: every parameter whole again on every rank
  /// (fences `exec`; nothing with StateSharding::None). Allocates nothing; every tensor's
  /// all-gather is in flight at once.
  void gatherParameters(const execution_space& exec);

  /// Where each of the optimizer's state buffers lies in its parameter's local elements (as
  /// CheckpointContents::optimizerStateParts wants them); empty with StateSharding::None, where
  /// each buffer is the whole.
  std::vector<ShardRange> stateParts(const Optimizer<T, MemorySpace>& optimizer) const;

private:
  // One parameter's sharding: the ranks holding a copy, this rank's part, and every rank's
  // parts as the all-gather wants them.
  struct Shard {
    MPI_Comm comm = MPI_COMM_NULL;  // world_, data_ or the parameter's replica communicator
    int ranks = 1;
    ShardRange range;
    std::vector<int> counts, offsets;
    view value;                          // the whole local value
    StagingBuffer<T, MemorySpace> host;  // its staged copy (empty unless Stage)
  };
  // The shard whose parameter path begins the optimizer state's path "<layer>/<param>/<state>".
  const Shard& shardOfState(const std::string& statePath) const;

  StateSharding mode_;
  OwnedComm world_, data_;
  std::vector<std::string> paths_;  // per parameter, NamedParameter::path()
  std::vector<Shard> shards_;       // per parameter
  std::vector<NamedParameter<T, MemorySpace>> parts_;
  std::vector<view> gradients_;
  std::vector<MPI_Request> requests_;  // gatherParameters' all-gathers, one per shard
};

extern template class ReplicatedStateShards<float, DefaultMemorySpace>;
extern template class ReplicatedStateShards<double, DefaultMemorySpace>;

}  // namespace hybrid3d
