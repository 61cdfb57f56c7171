// `hybrid3d gradients DECK.xml --weights W.h5 --out OUT.h5 SAMPLE.h5...`: loads weights in the
// checkpoint layout, runs one forward and backward on the given samples (one mini-batch, no
// update; dropout as the deck says, off with keep probability 1) and writes /output, /loss and
// /grads/<layer>/<param> (PyTorch shapes, float64): how users compare with other frameworks.
#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/comm/Redistribute.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/train/Checkpoint.hpp>
#include <hybrid3d/layers/DistributedParameter.hpp>
#include <hybrid3d/train/Trainer.hpp>

#include "../Command.hpp"
#include <hybrid3d/deck/TrainDeck.hpp>

namespace hybrid3d::app {
using deck::DeckRun;
using deck::readTrainDeck;
namespace {

// The model's output where the spatial grid holds it (every sample of the group on the group's
// ranks): as it is, or moved there from the grid its last layer runs on (layer grids).
template <class T>
EdgeTensor<T, DefaultMemorySpace> outputOnTheSpatialGrid(Model<T>& model) {
  auto& graph = *model.graph;
  const int last = int(graph.size()) - 1;
  const LayerGrid& from = graph.grid(last);
  const LayerGrid& to = model.grids->spatial();
  const auto& o = graph.output();
  if (from.layout() == to.layout()) return o;
  const TensorShape s = graph.shape(last);
  const int B = graph.inputShape().batch;
  EdgeTensor<T, DefaultMemorySpace> moved;
  Redistribute<T> r(from, to, {B, s.channels, s.extents}, !o.isVolume(), "output");
  if (o.isVolume()) {
    moved.volume = createDistTensor<T>("hybrid3d::output on the spatial grid", B, s.channels,
                                       BlockDecomposition(s.extents, to.dims()), to.coords());
    r.forward(DefaultExecutionSpace(), o.volume, moved.volume);
  } else {
    moved.features = FeatureView<T>("hybrid3d::output on the spatial grid", B, s.channels);
    using View = typename Redistribute<T>::view_type;
    r.forward(DefaultExecutionSpace(),
              {View(o.features.data(), o.features.extent(0), o.features.extent(1), 1, 1, 1)},
              {View(moved.features.data(), B, s.channels, 1, 1, 1)});
  }
  Kokkos::fence();
  return moved;
}

template <class T>
void report(const DeckRun& r, const std::string& weights, const std::string& out) {
  ProcessGrid grid(MPI_COMM_WORLD, r.spatialGrid);
  // Whole gradient sums on every rank, which a reduce-scatter (state sharded) would not leave.
  TrainConfig config = r.config;
  config.stateSharding = StateSharding::None;
  Trainer<T> trainer(grid, config);
  trainer.loadWeights(weights);
  const double loss = trainer.forwardBackward();
  auto& graph = *trainer.model().graph;

  std::vector<NamedArray> arrays;
  arrays.push_back({"/loss", {1}, {loss}});
  // The output of every group, in global sample order (group g holds samples g*L..g*L+L-1).
  const auto o = outputOnTheSpatialGrid(trainer.model());
  NamedArray output{"/output", {}, {}};
  if (o.isVolume()) {
    const auto g = gatherToGlobal(o.volume, grid.spatialComm());
    output.shape = {Index(g.extent(0)), Index(g.extent(1)), Index(g.extent(2)), Index(g.extent(3)),
                    Index(g.extent(4))};
    output.values.assign(g.data(), g.data() + g.size());
  } else {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), o.features);
    output.shape = {Index(h.extent(0)), Index(h.extent(1))};
    output.values.assign(h.data(), h.data() + h.size());
  }
  // Groups' outputs side by side along the batch: gather over the data communicator.
  const int G = grid.numGroups();
  std::vector<double> all(output.values.size() * G);
  MPI_Allgather(output.values.data(), int(output.values.size()), MPI_DOUBLE, all.data(),
                int(output.values.size()), MPI_DOUBLE, grid.dataComm());
  output.values = all;
  output.shape[0] *= G;
  arrays.push_back(output);
  // The reduced gradients as global tensors (a column shard's parts gathered).
  for (const auto& p : graph.parameters()) {
    const std::vector<ParamOf<T>> g = gatherGlobal(p.param, p.param.grad, grid.worldComm());
    arrays.push_back(
        {"/grads/" + p.path(), p.param.shape, std::vector<double>(g.begin(), g.end())});
  }
  writeArrays(out, grid.worldComm(), arrays);
}

struct Request {
  DeckRun run;
  std::string weights, out;
};

// What the options and the deck ask for (every rank reads them alike).
Request readRequest(const std::vector<std::string>& args) {
  std::string deck, weights, out;
  std::vector<std::string> samples;
  for (std::size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) fail("gradients: ", args[i], " needs a value");
      return args[++i];
    };
    if (args[i] == "--weights")
      weights = value();
    else if (args[i] == "--out")
      out = value();
    else if (!args[i].empty() && args[i][0] == '-')
      fail("gradients: unknown option ", args[i]);
    else if (deck.empty())
      deck = args[i];
    else
      samples.push_back(args[i]);
  }
  if (deck.empty() || weights.empty() || out.empty() || samples.empty())
    fail("gradients: usage: hybrid3d gradients DECK.xml --weights W.h5 --out OUT.h5 SAMPLE.h5...");
  int world;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  DeckRun r = readTrainDeck(deck, world, /*needTrainData=*/false);  // samples: the command line
  r.config.data.trainFiles = samples;
  r.config.data.validation.clear();
  r.config.data.shuffle = false;
  r.config.data.prefetch = false;
  r.config.globalBatch = static_cast<int>(samples.size());
  r.config.restartFrom.clear();
  return {r, weights, out};
}

int run(const std::vector<std::string>& args) {
  Request q;
  // Agreed, so a mistake in them ends the run with one line on every rank (a WorldError).
  data::collectively(MPI_COMM_WORLD, [&] { q = readRequest(args); });
  withPrecision(q.run.precision,
                [&](auto tag) { report<typename decltype(tag)::type>(q.run, q.weights, q.out); });
  return 0;
}

const Registration reg{
    "gradients",
    {"DECK.xml --weights W.h5 --out OUT.h5 SAMPLE.h5...",
     "one forward and backward pass on the given samples; writes output, loss and gradients",
     "  --weights W.h5   parameters in the checkpoint layout (a checkpoint will do)\n"
     "  --out OUT.h5     where the output, loss and gradients go\n"
     "  SAMPLE.h5...     the mini-batch (the deck's Data/train is not needed)\n",
     "mpirun -n 2 hybrid3d gradients inputs/cosmoflow_demo.xml --weights run/checkpoint.h5 "
     "--out grads.h5 data/train/cosmo_000000.h5 data/train/cosmo_000001.h5"},
    run};

}  // namespace
}  // namespace hybrid3d::app
