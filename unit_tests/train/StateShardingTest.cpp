// Replicated state sharded (train/ReplicatedStateShards.hpp, issue 39 point 6): a few CosmoFlow
// steps in double with the optimizer's state sharded (stage 1) and the gradients reduce-scattered
// too (stage 2) give the unsharded run's losses, parameters and optimizer state (1e-12) on
// every rank count, an uneven grid and two groups included; a checkpoint written sharded
// continues unsharded and the reverse, to the straight run's parameters. The optimizer's state
// and the reduce-scatter's parts are what the plan counts, and 1/P of the unsharded state. A
// checkpoint written sharded (each rank writing its parts) is the unsharded one bit for bit, and
// reading it on another layout and sharding and writing it again gives the same file.
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/comm/ShardRange.hpp>
#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/layers/DistributedParameter.hpp>
#include <hybrid3d/layers/FlattenDense.hpp>
#include <hybrid3d/optim/Adam.hpp>
#include <hybrid3d/plan/RunPlan.hpp>
#include <hybrid3d/plan/StepCost.hpp>
#include <hybrid3d/train/ReplicatedStateShards.hpp>
#include <hybrid3d/train/Trainer.hpp>

#include "GridCases.hpp"
#include "TrainingSamples.hpp"
#include "WorldRank.hpp"

namespace hybrid3d::test {
namespace {

constexpr int S = 16;
constexpr double Tolerance = 1e-12;
const StateSharding Modes[] = {StateSharding::None, StateSharding::Optimizer,
                               StateSharding::Gradients};

// The grids new at this rank count (those of more than half the world): each runs once over
// the registrations 1, 2, 4, 8. 3x1x1 cuts 16 unevenly; the G=2 ones sum over two groups.
std::vector<GridCase> newGridCases() {
  std::vector<GridCase> out;
  for (const GridCase& c : std::vector<GridCase>{{{1, 1, 1}, 1},
                                                 {{2, 1, 1}, 1},
                                                 {{1, 1, 1}, 2},
                                                 {{3, 1, 1}, 1},
                                                 {{2, 1, 1}, 2},
                                                 {{2, 2, 2}, 1},
                                                 {{2, 2, 1}, 2}}) {
    const int ranks = c.spatial[0] * c.spatial[1] * c.spatial[2] * c.groups;
    if (ranks <= worldSize() && 2 * ranks > worldSize()) out.push_back(c);
  }
  return out;
}

TrainConfig config(const std::string& dir, const std::vector<std::string>& files) {
  TrainConfig c = smallCosmoFlowRun(dir, files, S);
  c.model.dropoutKeep = 0.8;
  c.data.prefetch = false;
  c.checkpointMinutes = 0;
  c.schedule.baseRate = 1e-3;
  return c;
}

// What a run leaves: its losses, every parameter's global tensor and (from its checkpoint,
// written whole) every optimizer state, in the model's order.
struct Outcome {
  std::vector<double> losses, parameters, state;
};

std::vector<double> globalParameters(Trainer<double>& t, MPI_Comm comm) {
  std::vector<double> all;
  for (const auto& p : t.model().graph->parameters()) {
    const std::vector<double> g = gatherGlobal(p.param, p.param.value, comm);
    all.insert(all.end(), g.begin(), g.end());
  }
  return all;
}

// The optimizer's states of every parameter as the checkpoint at `path` holds them (rank 0
// reads, and broadcasts: every rank compares).
std::vector<double> optimizerState(Trainer<double>& t, const TrainConfig& c,
                                   const std::string& path, MPI_Comm comm) {
  const std::vector<std::string> states = c.optimizer == "adam"
                                              ? std::vector<std::string>{"exp_avg", "exp_avg_sq"}
                                              : std::vector<std::string>{"momentum_buffer"};
  std::vector<double> all;
  int rank;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) {
    const data::File f(path);
    for (const auto& p : t.model().graph->parameters())
      for (const std::string& state : states) {
        const std::vector<double> v = f.read<double>("/optimizer/" + p.path() + "/" + state);
        all.insert(all.end(), v.begin(), v.end());
      }
  }
  int n = static_cast<int>(all.size());
  MPI_Bcast(&n, 1, MPI_INT, 0, comm);
  all.resize(std::size_t(n));
  MPI_Bcast(all.data(), n, MPI_DOUBLE, 0, comm);
  return all;
}

Outcome stepped(const ProcessGrid& grid, TrainConfig c, StateSharding mode, int steps,
                const std::string& checkpoint) {
  c.stateSharding = mode;
  Trainer<double> t(grid, c);
  Outcome o;
  for (int s = 0; s < steps; ++s) o.losses.push_back(t.step());
  t.saveCheckpoint(checkpoint);
  o.parameters = globalParameters(t, grid.worldComm());
  o.state = optimizerState(t, c, checkpoint, grid.worldComm());
  return o;
}

// The largest |a - b| / max(1, |b|) (infinite when the sizes differ).
double maxError(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double e = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    e = std::max(e, std::abs(a[i] - b[i]) / std::max(1.0, std::abs(b[i])));
  return e;
}

TEST(StateSharding, ShardedStepsEqualTheUnshardedOnesWhateverTheGrid) {
  const std::string dir = scratchDirectory("state_sharding_test", "equal");
  const auto files = writeNoiseSamples(dir, false, 8, S);
  const int ran = forEachGrid(newGridCases(), [&](const ProcessGrid& grid, const GridCase& g) {
    const TrainConfig c = config(dir, files);
    const std::string tag = dir + "/" + toString(g.spatial) + "_" + std::to_string(g.groups);
    const Outcome whole = stepped(grid, c, StateSharding::None, 3, tag + "_none.h5");
    ASSERT_FALSE(whole.state.empty());
    for (StateSharding mode : {StateSharding::Optimizer, StateSharding::Gradients}) {
      SCOPED_TRACE(toString(mode));
      const Outcome sharded = stepped(grid, c, mode, 3, tag + "_" + toString(mode) + ".h5");
      EXPECT_LE(maxError(sharded.losses, whole.losses), Tolerance);
      EXPECT_LE(maxError(sharded.parameters, whole.parameters), Tolerance);
      EXPECT_LE(maxError(sharded.state, whole.state), Tolerance);
      if (grid.worldRank() == 0)
        std::printf("state sharding %s on %s: errors loss %.3g, parameters %.3g, state %.3g\n",
                    toString(mode), g.name().c_str(), maxError(sharded.losses, whole.losses),
                    maxError(sharded.parameters, whole.parameters),
                    maxError(sharded.state, whole.state));
    }
  });
  EXPECT_GE(ran, 1);
}

// The U-Net (batch norm, skip connections, a segmentation loss) with SGD and momentum, 2 steps
// on the widest new grid of the 2- and 4-rank registrations (2x1x1 G=2 at 4; 2 minutes at 8
// ranks on 2 cores, where CosmoFlow's cases run).
TEST(StateSharding, TheUNetWithMomentumEqualsTheUnshardedRun) {
  if (worldSize() == 1 || worldSize() > 4)
    GTEST_SKIP() << "the U-Net runs at 2 and 4 ranks (CosmoFlow's cases cover 1 and 8)";
  const std::string dir = scratchDirectory("state_sharding_test", "unet");
  const auto files = writeNoiseSamples(dir, true, 4, S);
  const int ran =
      forEachGrid({newGridCases().back()}, [&](const ProcessGrid& grid, const GridCase& g) {
        TrainConfig c = config(dir, files);
        c.model.architecture = "unet3d";
        c.model.dropoutKeep = 1;
        c.globalBatch = 2;
        c.optimizer = "sgd";
        c.sgd.momentum = 0.9;
        const std::string tag = dir + "/" + toString(g.spatial) + "_" + std::to_string(g.groups);
        const Outcome whole = stepped(grid, c, StateSharding::None, 2, tag + "_none.h5");
        ASSERT_FALSE(whole.state.empty());
        const Outcome sharded = stepped(grid, c, StateSharding::Gradients, 2, tag + "_sharded.h5");
        EXPECT_LE(maxError(sharded.losses, whole.losses), Tolerance);
        EXPECT_LE(maxError(sharded.parameters, whole.parameters), Tolerance);
        EXPECT_LE(maxError(sharded.state, whole.state), Tolerance);
        if (grid.worldRank() == 0)
          std::printf(
              "state sharding gradients, U-Net on %s: errors loss %.3g, parameters %.3g, "
              "state %.3g\n",
              g.name().c_str(), maxError(sharded.losses, whole.losses),
              maxError(sharded.parameters, whole.parameters), maxError(sharded.state, whole.state));
      });
  EXPECT_EQ(ran, 1);
}

// run() to `steps` with `mode` into `out`, from `restart` if given; the global parameters.
std::vector<double> runTo(const ProcessGrid& grid, TrainConfig c, StateSharding mode,
                          const std::string& out, long long steps,
                          const std::string& restart = "") {
  c.stateSharding = mode;
  c.outputDir = out;
  c.maxSteps = steps;
  c.restartFrom = restart;
  Trainer<double> t(grid, c);
  t.run();
  return globalParameters(t, grid.worldComm());
}

TEST(StateSharding, ACheckpointWrittenShardedContinuesUnshardedAndTheReverse) {
  const std::string dir = scratchDirectory("state_sharding_test", "restart");
  const auto files = writeNoiseSamples(dir, false, 8, S);
  // Two groups of a cut spatial grid where the world has the ranks.
  const int P = worldSize();
  const GridCase g = P >= 8   ? GridCase{{2, 2, 1}, 2}
                     : P >= 4 ? GridCase{{2, 1, 1}, 2}
                              : GridCase{{P, 1, 1}, 1};
  const int ran = forEachGrid({g}, [&](const ProcessGrid& grid, const GridCase&) {
    const TrainConfig c = config(dir, files);
    const auto straight = runTo(grid, c, StateSharding::None, dir + "/straight", 4);
    const std::pair<StateSharding, StateSharding> pairs[] = {
        {StateSharding::Gradients, StateSharding::None},
        {StateSharding::None, StateSharding::Optimizer}};
    for (const auto& [first, second] : pairs) {
      const std::string name = std::string(toString(first)) + "_then_" + toString(second);
      SCOPED_TRACE(name);
      runTo(grid, c, first, dir + "/" + name + "_first", 2);
      const auto resumed =
          runTo(grid, c, second, dir + "/" + name, 4, dir + "/" + name + "_first/checkpoint.h5");
      EXPECT_LE(maxError(resumed, straight), Tolerance);
    }
  });
  EXPECT_EQ(ran, 1);
}

// The datasets of an HDF5 file, by path from the root.
std::vector<std::string> datasetNames(const data::File& f) {
  std::vector<std::string> links;
  H5Lvisit(
      f.id(), H5_INDEX_NAME, H5_ITER_INC,
      [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
        static_cast<std::vector<std::string>*>(out)->push_back(std::string("/") + name);
        return 0;
      },
      &links);
  std::vector<std::string> names;
  for (const std::string& l : links)
    if (f.hasDataset(l)) names.push_back(l);
  return names;
}

// A dataset's stored bytes, its type and shape, and its checksum attribute.
struct StoredBytes {
  std::vector<unsigned char> bytes;
  std::vector<Index> shape;
  std::uint64_t checksum = 0;
};

StoredBytes storedBytes(const data::File& f, const std::string& name) {
  StoredBytes s;
  s.shape = f.shape(name);
  const data::Handle d = f.openDataset(name);
  const data::Handle type(H5Dget_type(d), H5Tclose);
  s.bytes.resize(std::size_t(globalSize(s.shape)) * H5Tget_size(type));
  EXPECT_GE(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, s.bytes.data()), 0) << name;
  const data::Handle attr(H5Aopen(d, "elementhash64", H5P_DEFAULT), H5Aclose);
  const hid_t u64 = H5T_NATIVE_UINT64;
  EXPECT_GE(H5Aread(attr, u64, &s.checksum), 0) << name;
  return s;
}

// Rank 0: the files at `a` and `b` hold the same datasets, bit for bit, with the same checksums.
void expectSameDatasets(const std::string& a, const std::string& b) {
  if (worldRank() != 0) return;
  const data::File fa(a), fb(b);
  const std::vector<std::string> names = datasetNames(fa);
  ASSERT_EQ(names, datasetNames(fb)) << a << " and " << b;
  for (const std::string& name : names) {
    const StoredBytes x = storedBytes(fa, name), y = storedBytes(fb, name);
    EXPECT_EQ(x.shape, y.shape) << name;
    EXPECT_TRUE(x.bytes == y.bytes) << name << " differs between " << a << " and " << b;
    EXPECT_EQ(x.checksum, y.checksum) << name;
  }
  EXPECT_EQ(fa.attributeString("deck"), fb.attributeString("deck"));
}

// Replicated tensors of uneven sizes (fewer values than ranks at 8) and the first dense layer's
// column shard over a spatial grid (5 planes cut 3 and 2), given the same global values and
// summed gradients on every layout; Adam steps them with its state sharded by `mode` (stage 2's
// summed parts are put where its reduce-scatter leaves them).
struct ShardedModel {
  ShardedModel(const ProcessGrid& grid, StateSharding mode)
      : fc(grid, "fc1", TensorShape{1, 3, {5, 2, 3}}, {5, true}),
        params{{"conv1", createParameter<double>("conv1", "weight", {7, 3})},
               {"conv1", createParameter<double>("conv1", "bias", {3})}} {
    for (const auto& p : fc.parameters()) params.push_back({fc.name(), p});
    std::vector<std::vector<ScopedGradient<double, DefaultMemorySpace>>> layers(1);
    std::mt19937_64 rng(23);  // the same global tensors on every rank and layout
    std::uniform_real_distribution<double> u(-1, 1);
    for (const auto& p : params) {
      std::vector<double> value(std::size_t(globalSize(p.param.shape))), grad(value.size());
      for (std::size_t i = 0; i < value.size(); ++i) value[i] = u(rng), grad[i] = u(rng);
      scatterGlobal(p.param, value, p.param.value);
      scatterGlobal(p.param, grad, p.param.grad);
      layers[0].push_back({p.param.grad, p.param.layout.gradientScope, p.param.layout.replicaComm});
    }
    reducer = std::make_unique<GradientReducer<double>>(
        grid.worldComm(), grid.dataComm(), layers,
        mode == StateSharding::Gradients ? ReduceTo::Shards : ReduceTo::Whole);
    shards = std::make_unique<ReplicatedStateShards<double>>(mode, grid.worldComm(),
                                                             grid.dataComm(), params, *reducer);
    for (std::size_t i = 0; i < params.size(); ++i) {
      const auto& whole = params[i].param;
      const auto& part = shards->optimizerParameters()[i].param;
      const std::size_t begin = std::size_t(part.value.data() - whole.value.data());
      if (part.grad.data() != whole.grad.data() + begin)
        Kokkos::deep_copy(
            part.grad,
            Kokkos::subview(whole.grad, std::make_pair(begin, begin + part.grad.size())));
    }
    adam = std::make_unique<Adam<double>>(shards->optimizerParameters(), AdamOptions{});
  }
  CheckpointContents<double, DefaultMemorySpace> contents() const {
    return {params, {}, adam.get(), shards->stateParts(*adam)};
  }
  FlattenDense<double> fc;
  std::vector<NamedParameter<double>> params;
  std::unique_ptr<GradientReducer<double>> reducer;
  std::unique_ptr<ReplicatedStateShards<double>> shards;
  std::unique_ptr<Adam<double>> adam;
};

TEST(StateSharding, ACheckpointWrittenShardedIsTheUnshardedOneAndRestartsOnAnyLayout) {
  const std::string dir = scratchDirectory("state_sharding_test", "file");
  const int P = worldSize();
  const RunState state{2, 0, 7, "<ParameterList/>", {{"mini-batch", "2"}}, ""};
  const std::string first = dir + "/none.h5";
  const ProcessGrid grid(MPI_COMM_WORLD, {P >= 2 ? 2 : 1, 1, 1});  // P/2 groups
  for (StateSharding mode : Modes) {
    SCOPED_TRACE(toString(mode));
    ShardedModel m(grid, mode);
    for (int step = 0; step < 2; ++step) {
      m.adam->step(DefaultExecutionSpace(), 1e-2);
      m.shards->gatherParameters(DefaultExecutionSpace());
    }
    const std::string path = dir + "/" + toString(mode) + ".h5";
    writeCheckpoint(path, grid.worldComm(), m.contents(), state);
    expectSameDatasets(first, path);
  }
  // Read on another layout (the 3 columns cut 2 and 1, P/2 groups) with each sharding, and
  // written again there: the same file.
  const ProcessGrid other(MPI_COMM_WORLD, {1, 1, P >= 2 ? 2 : 1});
  for (StateSharding mode : Modes) {
    SCOPED_TRACE(std::string("read with ") + toString(mode));
    ShardedModel m(other, mode);
    const RunState back = readCheckpoint(first, other.worldComm(), m.contents());
    EXPECT_EQ(back.step, state.step);
    EXPECT_EQ(m.adam->steps(), 2);
    const std::string again = dir + "/again_" + toString(mode) + ".h5";
    writeCheckpoint(again, other.worldComm(), m.contents(), back);
    expectSameDatasets(first, again);
  }
}

// Bytes of Adam's state and (stage 2) of the gradient sums' parts on this rank, built as the
// trainer builds them.
std::size_t heldStateBytes(const ProcessGrid& grid, const TrainConfig& c, StateSharding mode) {
  const auto model = buildModel<double>(grid, groupModelOptions(c, grid.numGroups()));
  const auto& graph = *model.graph;
  const GradientReducer<double> reducer(
      grid.worldComm(), grid.dataComm(), graph.gradientsByNode(),
      mode == StateSharding::Gradients ? ReduceTo::Shards : ReduceTo::Whole);
  const ReplicatedStateShards<double> shards(mode, grid.worldComm(), grid.dataComm(),
                                             graph.parameters(), reducer);
  const Adam<double> adam(shards.optimizerParameters(), c.adam);
  std::size_t values = 0;
  for (const auto& state : adam.state()) values += state.second.size();
  for (const auto& p : graph.parameters())
    if (reducer.sum(p.param.grad).data() != p.param.grad.data())
      values += reducer.sum(p.param.grad).size();
  return values * sizeof(double);
}

// On a cut spatial grid with two groups where the world has them, and on P groups of one rank:
// there every tensor, the first dense layer's columns included, is held whole by all P ranks,
// so the sharded state is 1/P of the whole (up to a value per tensor and state).
TEST(StateSharding, TheHeldStateIsWhatThePlanCountsAndAPthOfTheUnshardedOne) {
  const int P = worldSize();
  const GridCase spatial = P >= 4 ? GridCase{{2, P >= 8 ? 2 : 1, 1}, 2} : GridCase{{P, 1, 1}, 1};
  forEachGrid({spatial, {{1, 1, 1}, P}}, [&](const ProcessGrid& grid, const GridCase& g) {
    TrainConfig c = config("unused", {"unused"});
    c.globalBatch = P;  // a sample per group of one rank
    RunPlan plan;
    plan.groups = grid.numGroups();
    plan.grid = grid.dims();
    plan.precision = Precision::Double;
    plan.model = planModel(groupModelOptions(c, plan.groups), plan.grid);
    plan.optimizerStates = 2;  // Adam
    std::size_t unsharded = 0;
    for (StateSharding mode : Modes) {
      SCOPED_TRACE(toString(mode));
      plan.stateSharding = mode;
      std::size_t planned = 0;  // the largest spatial rank's
      for (int d = 0; d < plan.grid[0]; ++d)
        for (int h = 0; h < plan.grid[1]; ++h)
          planned = std::max(planned, replicatedStateBytes(plan, {d, h, 0}));
      unsigned long long held = heldStateBytes(grid, c, mode);
      MPI_Allreduce(MPI_IN_PLACE, &held, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, grid.worldComm());
      EXPECT_EQ(held, planned);
      if (mode == StateSharding::None) unsharded = held;
      // A part per parameter tensor and state: at most one value more than 1/P of it.
      std::size_t tensors = 0;
      for (const LayerPlan& l : plan.model.layers) tensors += l.tensors.size();
      if (mode == StateSharding::Optimizer && grid.spatialSize() == 1) {
        EXPECT_LE(held,
                  unsharded / std::size_t(P) + tensors * plan.optimizerStates * sizeof(double));
      }
      if (grid.worldRank() == 0)
        std::printf("state sharding %s on %s: optimizer state%s %.3f MiB per rank\n",
                    toString(mode), g.name().c_str(),
                    mode == StateSharding::Gradients ? " and gradient parts" : "",
                    double(held) / (1 << 20));
    }
  });
}

// The gather after the step, direct and staged through host copies (a GPU build without
// GPU-aware MPI): each rank writes only its part of two tensors (an uneven 13 and a 3, fewer
// values than ranks at 8), and every rank ends with the whole of both, its parts from their owners.
template <bool Stage>
void expectGatherMakesEveryParameterWhole() {
  using M = Kokkos::HostSpace;
  const int P = worldSize(), rank = worldRank();
  std::vector<NamedParameter<double, M>> params;
  std::vector<std::vector<ScopedGradient<double, M>>> layers(1);
  for (Index n : {Index(13), Index(3)}) {
    NamedParameter<double, M> p;
    p.layer = "layer";
    p.param.name = "t" + std::to_string(n);
    p.param.shape = {n};
    p.param.value = Kokkos::View<double*, M>("value", n);
    p.param.grad = Kokkos::View<double*, M>("grad", n);
    layers[0].push_back({p.param.grad, GradientScope::World, MPI_COMM_NULL});
    params.push_back(p);
  }
  const GradientReducer<double, M, Stage> reducer(MPI_COMM_WORLD, MPI_COMM_WORLD, layers);
  ReplicatedStateShards<double, M, Stage> shards(StateSharding::Optimizer, MPI_COMM_WORLD,
                                                 MPI_COMM_WORLD, params, reducer);
  for (std::size_t t = 0; t < params.size(); ++t) {
    const auto part = shards.optimizerParameters()[t].param.value;  // a view into the whole
    for (std::size_t i = 0; i < part.size(); ++i) part(i) = 1000.0 * double(t) + rank + 0.5;
  }
  shards.gatherParameters(Kokkos::DefaultHostExecutionSpace());
  for (std::size_t t = 0; t < params.size(); ++t) {
    const auto whole = params[t].param.value;
    const std::size_t n = whole.size();
    for (int owner = 0; owner < P; ++owner) {
      const ShardRange r = shardRange(n, owner, P);
      for (std::size_t i = r.begin; i < r.end(); ++i)
        ASSERT_EQ(whole(i), 1000.0 * double(t) + owner + 0.5)
            << params[t].path() << " value " << i << (Stage ? ", staged" : ", direct");
    }
  }
}

TEST(StateSharding, TheGatherAfterTheStepMakesEveryParameterWholeDirectAndStaged) {
  expectGatherMakesEveryParameterWhole<false>();
  expectGatherMakesEveryParameterWhole<true>();
}

}  // namespace
}  // namespace hybrid3d::test
