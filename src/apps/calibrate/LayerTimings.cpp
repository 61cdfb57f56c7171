#include "LayerTimings.hpp"

#include <algorithm>
#include <map>
#include <memory>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/RegionTimes.hpp>
#include <hybrid3d/engines/impl/HostWorkspace.hpp>
#include <hybrid3d/plan/RunPlan.hpp>
#include <hybrid3d/plan/StepCost.hpp>

#include "Statistics.hpp"
#include "TrainingSetup.hpp"

namespace hybrid3d::app::calibrate {

namespace {

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
