#include "LayerTimings.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <random>

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>

#include <hybrid3d/comm/GradientReducer.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/RegionTimes.hpp>
#include <hybrid3d/data/Preprocess.hpp>
#include <hybrid3d/data/Subvolume.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/engines/impl/HostWorkspace.hpp>
#include <hybrid3d/model/Models.hpp>
#include <hybrid3d/optim/Adam.hpp>
#include <hybrid3d/optim/Sgd.hpp>
#include <hybrid3d/plan/RunPlan.hpp>
#include <hybrid3d/plan/StepCost.hpp>

#include "Statistics.hpp"

namespace hybrid3d::app::calibrate {

namespace {

using M = DefaultMemorySpace;
using Exec = DefaultExecutionSpace;

// The deck's configuration for one rank alone at input width `size`, local batch 1.
TrainConfig configFor(const deck::DeckRun& deck, int size) {
  TrainConfig c = deck.config;
  c.model.inputWidth = size;
  c.globalBatch = 1;
  c.validationBatch = 0;
  c.model.layerGrids = {};  // timed on one rank: a deck's layer grids of more ranks would not fit
  return c;
}

// The model with what the trainer builds around it (src/train/Trainer.cpp): its optimizer, a
// gradient reducer (nothing to reduce on one rank, but the calls a step makes), synthetic
// inputs and truth (the first layers' ghosts filled, as the trainer's preprocessing does).
template <class T>
struct Setup {
  ProcessGrid grid{MPI_COMM_SELF, {1, 1, 1}};
  Model<T, M> model;
  std::unique_ptr<Optimizer<T, M>> optimizer;
  std::unique_ptr<GradientReducer<T, M>> reducer;
  // The trainer's preprocessing of a sample as the files store it (IoModel), into the input.
  std::unique_ptr<data::Preprocess<T, M>> preprocess;
  data::SampleFormat format;
  std::vector<unsigned char> stored;
  Exec exec;

  Setup(const TrainConfig& config, int seed, const IoModel& io) {
    ModelOptions mo = config.model;
    mo.batch = 1;
    model = buildModel<T, M>(grid, mo);
    auto& g = *model.graph;
    data::PreprocessOptions po;
    po.log1p = config.data.log1p;
    po.channelScale = config.data.channelScale;
    po.channelOffset = config.data.channelOffset;
    const data::Subvolume sub = data::Subvolume::of(g.input().volume);
    preprocess = std::make_unique<data::Preprocess<T, M>>(po, model.inputChannels, sub);
    format.type = io.fileScalarBytes == 2 ? data::StoredType::Int16 : data::StoredType::Float32;
    stored.assign(
        std::size_t(model.inputChannels) * std::size_t(sub.read.size()) * format.elementSize(),
        0);  // zeros: counts or intensities, log1p defined
    if (config.optimizer == "adam")
      optimizer = std::make_unique<Adam<T, M>>(g.parameters(), config.adam);
    else
      optimizer = std::make_unique<Sgd<T, M>>(g.parameters(), config.sgd);
    reducer = std::make_unique<GradientReducer<T, M>>(grid.worldComm(), grid.dataComm(),
                                                      g.gradientsByNode());
    Kokkos::Random_XorShift64_Pool<Exec> pool(1234 + 17 * seed);
    Kokkos::fill_random(g.input().volume.view(), pool, T(0), T(1));
    std::mt19937 stream(99 + seed);
    std::vector<float> targets(std::size_t(model.outputs));
    for (float& t : targets) t = std::uniform_real_distribution<float>(-1, 1)(stream);
    const Index S = config.model.inputWidth;
    std::vector<int> labels(std::size_t(S * S * S));
    for (int& l : labels) l = std::uniform_int_distribution<int>(0, model.outputs - 1)(stream);
    model.task->load(exec, {targets.data(), targets.size(), labels.data(), labels.size()}, 0, 1);
    g.setInputGhostsFilled(true);
    g.setTraining(true);
    exec.fence();
  }

  // The trainer's load of the sample into the model's input (Trainer::load).
  void load() {
    preprocess->apply(exec, format, stored.data(), model.graph->input().volume, 0);
    exec.fence();
  }

  // One training step as Trainer::step takes it, minus the loader.
  void step(long long i, double lr) {
    auto& g = *model.graph;
    g.setStep(i, 0);
    g.zeroGradients(exec);
    g.forward(exec);
    model.task->loss(exec, g, true);
    g.backward(exec, reducer.get());
    reducer->finish(exec);
    optimizer->step(exec, lr);
    exec.fence();
  }
};

template <class T>
std::vector<LayerPoint> timeAs(MPI_Comm world, const deck::DeckRun& deck, int size, int steps) {
  int rank;
  MPI_Comm_rank(world, &rank);
  const TrainConfig config = configFor(deck, size);
  const RunPlan run = planRun<T, M>(config, {1, 1, 1}, 1, {"calibration", 1}, {});
  const IoModel io = ioModelFor(config);
  const StepCost counts = countStep(run, {0, 0, 0}, io);
  const std::size_t L = run.model.layers.size();
  if (counts.layers.size() != L)
    fail("calibrate: internal error, ", counts.layers.size(), " layer costs for ", L, " layers");

  std::vector<std::vector<double>> seconds(L);  // per layer, per timed step
  std::vector<double> loading, rest;            // the load, the step beyond its layers
  {
    Setup<T> s(config, rank, io);
    RegionTimes::install();
    for (int i = 0; i <= steps; ++i) {
      MPI_Barrier(world);  // every rank steps at once
      RegionTimes::clear();
      RegionTimes::record(i > 0);  // step 0 warms up: first-touch, engines' set-up
      const double t0 = MPI_Wtime();
      s.load();
      const double t1 = MPI_Wtime();
      s.step(i, config.schedule.baseRate);
      const double t2 = MPI_Wtime();
      RegionTimes::record(false);
      if (i == 0) continue;
      loading.push_back(t1 - t0);
      double inLayers = 0;
      const auto& times = RegionTimes::seconds();
      for (std::size_t id = 0; id < L; ++id) {
        const std::string& name = run.model.layers[id].name;
        const auto f = times.find("hybrid3d::node::forward " + name),
                   b = times.find("hybrid3d::node::backward " + name);
        if (f == times.end() || b == times.end())
          fail("calibrate: internal error, layer '", name, "' was not timed");
        seconds[id].push_back(f->second.wall + b->second.wall);
        inLayers += seconds[id].back();
      }
      rest.push_back(std::max(0.0, t2 - t1 - inLayers));
    }
  }
  // The next model starts from nothing: the onednn engine's shared buffer goes with this one.
  Impl::HostWorkspace::instance().release();
  std::vector<LayerPoint> points;
  for (std::size_t id = 0; id < L; ++id) {
    LayerPoint p;
    p.key = layerKey(run, int(id), {0, 0, 0});
    p.layer = run.model.layers[id].name;
    p.kind = run.model.layers[id].kind;
    p.precision = precisionOf<T>();
    p.voxels = counts.layers[id].work;
    p.flops = counts.layers[id].flops;
    p.seconds = median(gatherAll(world, seconds[id]));
    points.push_back(p);
  }
  // The step beyond its layers: the load (preprocessing) and the update (zeroing gradients,
  // the loss, the reductions' end, the optimizer), each with its key and work.
  for (const auto& [cost, times] :
       {std::pair<const LayerCost&, const std::vector<double>&>{counts.input, loading},
        std::pair<const LayerCost&, const std::vector<double>&>{counts.update, rest}}) {
    LayerPoint p;
    p.key = cost.key;
    p.layer = cost.name;
    p.kind = cost.kind;
    p.precision = precisionOf<T>();
    p.voxels = cost.work;
    p.seconds = median(gatherAll(world, times));
    points.push_back(p);
  }
  return points;
}

}  // namespace

std::vector<LayerPoint> timeLayers(MPI_Comm world, const deck::DeckRun& deck, int size, int steps) {
  switch (deck.precision) {
    case Precision::Double:
      return timeAs<double>(world, deck, size, steps);
    case Precision::Float:
      return timeAs<float>(world, deck, size, steps);
    case Precision::BFloat16:
    case Precision::Half:
      break;  // checkSize refused it
  }
  fail("calibrate: internal error, layers timed in ", toString(deck.precision));
}

void checkSize(const deck::DeckRun& deck, int size) {
  const TrainConfig config = configFor(deck, size);
  switch (deck.precision) {
    case Precision::Double:
      planRun<double, M>(config, {1, 1, 1}, 1, {"calibration", 1}, {});
      return;
    case Precision::Float:
      planRun<float, M>(config, {1, 1, 1}, 1, {"calibration", 1}, {});
      return;
    case Precision::BFloat16:
    case Precision::Half:
      // The layers' 16-bit forms (Model<bfloat16>, Model<float16>) are what timeAs needs; until
      // this build has them, the layers are timed in float and double only (the 16-bit peak
      // rates are measured all the same).
      fail("calibrate: Model/precision ", toString(deck.precision),
           ": this build times layers in float and double only; calibrate a copy of the deck "
           "in float");
  }
}

std::vector<LayerTiming> mergeTimings(const std::vector<LayerPoint>& points) {
  // Per key (in the order keys are first met), per voxels: every measured seconds.
  std::vector<std::string> order;
  std::map<std::string, std::map<double, std::vector<double>>> byKey;
  for (const LayerPoint& p : points) {
    if (!byKey.count(p.key)) order.push_back(p.key);
    byKey[p.key][p.voxels].push_back(p.seconds);
  }
  std::vector<LayerTiming> out;
  for (const std::string& key : order) {
    LayerTiming t;
    t.layer = key;
    for (const auto& [voxels, seconds] : byKey[key]) {  // std::map: increasing voxels
      t.voxels.push_back(voxels);
      t.seconds.push_back(median(seconds));
    }
    out.push_back(t);
  }
  return out;
}

}  // namespace hybrid3d::app::calibrate
