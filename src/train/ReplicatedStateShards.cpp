#include <hybrid3d/train/ReplicatedStateShards.hpp>

#include <hybrid3d/comm/MpiTypes.hpp>
#include <hybrid3d/core/Error.hpp>

namespace hybrid3d {

namespace {

template <class T, class M>
Kokkos::View<T*, M> part(const Kokkos::View<T*, M>& v, const ShardRange& r) {
  return Kokkos::subview(v, std::make_pair(r.begin, r.end()));
}

}  // namespace

template <class T, class M, bool Stage>
ReplicatedStateShards<T, M, Stage>::ReplicatedStateShards(
    StateSharding mode, MPI_Comm world, MPI_Comm dataParallel,
    const std::vector<NamedParameter<T, M>>& parameters,
    const GradientReducer<T, M, Stage>& reducer)
    : mode_(mode), world_(world), data_(dataParallel) {
  for (const auto& named : parameters) {
    const Parameter<T, M>& p = named.param;
    Shard s;
    s.value = p.value;
    if (mode != StateSharding::None) {
      const bool world = p.layout.gradientScope == GradientScope::World;
      const ScopedGradient<T, M> scoped{p.grad, p.layout.gradientScope,
                                        world ? MPI_COMM_NULL : p.layout.replicaComm};
      s.comm = reductionComm(scoped, world_.get(), data_.get());
      MPI_Comm_size(s.comm, &s.ranks);
    }
    int rank = 0;
    if (s.ranks > 1) MPI_Comm_rank(s.comm, &rank);
    s.range = shardRange(p.value.size(), rank, s.ranks);
    s.counts = shardCounts(p.value.size(), s.ranks);
    s.offsets = shardOffsets(p.value.size(), s.ranks);
    if (s.ranks > 1)
      s.host = stagingBuffer<T, M, Stage>(p.value.label() + " (gather)", p.value.size());
    NamedParameter<T, M> owned = named;
    owned.param.value = part(p.value, s.range);
    // Stage 2: the reducer's part of the sum; stage 1: this part of the whole sum.
    owned.param.grad = mode == StateSharding::Gradients && s.ranks > 1 ? reducer.sum(p.grad)
                                                                       : part(p.grad, s.range);
    if (owned.param.grad.size() != s.range.count)
      fail("state sharding: ", named.path(), ": the gradient reducer's part has ",
           owned.param.grad.size(), " elements, not ", s.range.count,
           " (was it built with ReduceTo::Shards?)");
    if (s.ranks > 1) requests_.push_back(MPI_REQUEST_NULL);
    paths_.push_back(named.path());
    gradients_.push_back(owned.param.grad);
    parts_.push_back(owned);
    shards_.push_back(std::move(s));
  }
}

template <class T, class M, bool Stage>
void ReplicatedStateShards<T, M, Stage>::gatherParameters(const execution_space& exec) {
  if (requests_.empty()) return;
  if constexpr (Stage)
    for (const Shard& s : shards_)
      if (s.ranks > 1) Kokkos::deep_copy(exec, part(s.host, s.range), part(s.value, s.range));
  exec.fence();  // the parts are written before MPI reads them
  // One fence and one wait for all tensors: their all-gathers overlap one another (every rank
  // starts them in the same order, as MPI requires of collectives on one communicator).
  std::size_t n = 0;
  for (const Shard& s : shards_) {
    if (s.ranks <= 1) continue;
    T* data = Stage ? s.host.data() : s.value.data();
    MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, s.counts.data(), s.offsets.data(),
                    mpiType<T>(), s.comm, &requests_[n++]);
  }
  MPI_Waitall(int(n), requests_.data(), MPI_STATUSES_IGNORE);
  if constexpr (Stage)
    for (const Shard& s : shards_)
      if (s.ranks > 1) Kokkos::deep_copy(exec, s.value, s.host);
  exec.fence();
}

template <class T, class M, bool Stage>
const typename ReplicatedStateShards<T, M, Stage>::Shard&
ReplicatedStateShards<T, M, Stage>::shardOfState(const std::string& statePath) const {
  for (std::size_t i = 0; i < paths_.size(); ++i)
    if (statePath.rfind(paths_[i] + "/", 0) == 0) return shards_[i];
  fail("state sharding: optimizer state '", statePath, "' belongs to no parameter");
}

template <class T, class M, bool Stage>
std::vector<ShardRange> ReplicatedStateShards<T, M, Stage>::stateParts(
    const Optimizer<T, M>& optimizer) const {
  std::vector<ShardRange> parts;
  if (mode_ == StateSharding::None) return parts;
  for (const auto& [path, buffer] : optimizer.state()) {
    const Shard& s = shardOfState(path);
    if (buffer.size() != s.range.count)
      fail("state sharding: optimizer state '", path, "' has ", buffer.size(),
           " elements, not its parameter's part's ", s.range.count);
    parts.push_back(s.range);
  }
  return parts;
}

template class ReplicatedStateShards<float, DefaultMemorySpace>;
template class ReplicatedStateShards<double, DefaultMemorySpace>;
// The host-staged form (what a GPU build without GPU-aware MPI runs), on host memory for tests.
template class ReplicatedStateShards<double, Kokkos::HostSpace, true>;

}  // namespace hybrid3d
