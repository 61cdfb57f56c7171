// bench_layer_grids: a whole training step (float, SGD, synthetic data already on the device) on
// one grid for every layer against the same step with layer grids (docs/design.md section 11), the
// two run in turn step by step in one process (A B A B ...) so that both see the same machine.
// Per configuration: the step's median, minimum and maximum (slowest rank), the share of the
// step spent in redistributions, and with --machine the performance model's predicted step
// (plan/StepCost.hpp, slowest of its three ranks). Per redistribution of the staged model: its
// time in the step (its node's forward and backward regions, waits for the other ranks
// included) and share of the step; then the operator alone (forward and adjoint, the ranks
// entering together): the bytes the busiest rank moves (sent and kept), the time, the rate, and
// the rate of a plain copy of as many bytes measured in the same run, with their ratio.
//
// Usage: mpirun -n P bench_layer_grids [--model cosmoflow] [--size 128] [--batch 2]
//          [--grid 2x1x1] [--layer-grids SPEC] [--min-box-width K] [--steps 6] [--warmup 2]
//          [--machine FILE]
// --batch: samples per data-parallel group (the world holds world / P groups); --layer-grids
// and --min-box-width: the staged configuration (Parallel/layer grids, Parallel/minimum box
// width); default: the dense head and every layer from conv4 on on 1x1x1.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/MpiThreads.hpp>
#include <hybrid3d/core/PhaseTimers.hpp>
#include <hybrid3d/core/RegionTimes.hpp>
#if HYBRID3D_BENCH_MACHINE_FILES
#include <hybrid3d/deck/MachineDeck.hpp>
#endif
#include <hybrid3d/model/RedistributeNode.hpp>
#include <hybrid3d/plan/StepCost.hpp>

#include "BlasInfo.hpp"
#include "TrainingStep.hpp"

namespace {

using namespace hybrid3d;

struct Options {
  std::string model = "cosmoflow", grid = "2x1x1", layerGrids = "conv4..fc3=1x1x1", machine;
  int size = 128, batch = 2, minimumBoxWidth = 0, steps = 6, warmup = 2;
};

Options parse(int argc, char** argv) {
  Options o;
  bool spec = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(a, " needs a value");
      return argv[++i];
    };
    if (a == "--model") {
      o.model = value();
    } else if (a == "--size") {
      o.size = std::atoi(value().c_str());
    } else if (a == "--batch") {
      o.batch = std::atoi(value().c_str());
    } else if (a == "--grid") {
      o.grid = value();
    } else if (a == "--layer-grids") {
      o.layerGrids = value();
      spec = true;
    } else if (a == "--min-box-width") {
      o.minimumBoxWidth = std::atoi(value().c_str());
      if (!spec) o.layerGrids.clear();
    } else if (a == "--steps") {
      o.steps = std::atoi(value().c_str());
    } else if (a == "--warmup") {
      o.warmup = std::atoi(value().c_str());
    } else if (a == "--machine") {
      o.machine = value();
      // Machine files are Teuchos decks: read only where the deck library is built.
      if (!HYBRID3D_BENCH_MACHINE_FILES)
        fail(
            "--machine: this build has no input decks (HYBRID3D_ENABLE_DECKS=OFF), so no "
            "machine file can be read");
    } else {
      fail("unknown option ", a,
           " (--model M --size S --batch B --grid DxHxW --layer-grids SPEC --min-box-width K "
           "--steps N --warmup W --machine FILE)");
    }
  }
  if (o.steps < 1 || o.warmup < 1 || o.batch < 1) fail("--steps, --warmup, --batch must be >= 1");
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double maxOver(double v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return v;
}

// Seconds of the fastest of several copies of `bytes` bytes (float to float, one kernel, as
// the redistribution's own copy kernels run): the yardstick of a memory-bound step.
double copySeconds(std::size_t bytes) {
  const std::size_t n = std::max<std::size_t>(1, bytes / sizeof(float));
  Kokkos::View<float*> a("copy source", n), b("copy destination", n);
  Kokkos::deep_copy(a, 1.0f);
  Kokkos::deep_copy(b, 0.0f);
  double best = 1e30;
  for (int r = 0; r < 7; ++r) {
    Kokkos::fence();
    const double t0 = MPI_Wtime();
    Kokkos::parallel_for(
        "bench copy", Kokkos::RangePolicy<>(0, n),
        KOKKOS_LAMBDA(const std::size_t i) { b(i) = a(i); });
    Kokkos::fence();
    best = std::min(best, MPI_Wtime() - t0);
  }
  return best;
}

// What one configuration measured over its timed steps (slowest rank per step).
struct Measured {
  std::vector<double> stepMs, redistributeMs;
};

// A redistribution of the staged model on this rank: its node name and the bytes it moves per
// step, forward and adjoint (sent to other ranks and kept).
struct Moving {
  std::string name;
  double bytes = 0;
};

std::vector<Moving> redistributions(Model<float>& m) {
  std::vector<Moving> out;
  auto& g = *m.graph;
  for (std::size_t i = 0; i < g.size(); ++i)
    if (auto* r = dynamic_cast<RedistributeNode<float>*>(&g.node(i))) {
      const auto& d = r->redistribution();
      out.push_back({r->name(),
                     double(d.bytesSent() + d.adjointBytesSent()) + 2.0 * double(d.bytesCopied())});
    }
  return out;
}

TrainConfig configOf(const Options& o, const ModelOptions& mo, int groups) {
  TrainConfig c;
  c.model = mo;
  c.globalBatch = o.batch * groups;
  c.optimizer = "sgd";
  c.sgd.momentum = 0;
  return c;
}

using Step = bench::TrainingStepOf<float>;

// The two configurations: A, every layer on the grid of --grid; B, the staged layer grids.
struct Configurations {
  ModelOptions plain, staged;
  std::string stagedName;  // B's layer grids and minimum box width, as given
};

Configurations configurationsOf(const Options& o) {
  Configurations c;
  c.plain.architecture = o.model;
  c.plain.inputWidth = o.size;
  c.plain.batch = o.batch;
  c.plain.seed = 7;
  c.staged = c.plain;
  c.staged.layerGrids.entries = parseLayerGridEntries(o.layerGrids);
  c.staged.layerGrids.minimumBoxWidth = o.minimumBoxWidth;
  c.stagedName = (o.layerGrids.empty() ? std::string() : o.layerGrids) +
                 (o.minimumBoxWidth > 0 ? (o.layerGrids.empty() ? "" : ", ") + std::string("K = ") +
                                              std::to_string(o.minimumBoxWidth)
                                        : "");
  return c;
}

void printHeader(const Options& o, const ProcessGrid& grid, const Configurations& c) {
  std::printf(
      "bench_layer_grids: %s %d^3, %d ranks = %d group(s) x spatial grid %s, %d samples per "
      "group, float, SGD; A: every layer on %s; B: layer grids %s; steps A B A B ..., ms per "
      "step = slowest rank\n",
      o.model.c_str(), o.size, grid.worldSize(), grid.numGroups(), o.grid.c_str(), o.batch,
      o.grid.c_str(), c.stagedName.c_str());
  bench::printBlasInfo();
  std::fflush(stdout);
}

// The steps of A and B in turn, warm-up first; B's timed steps record their regions.
std::array<Measured, 2> measureSteps(const Options& o, const ProcessGrid& grid, Step& a, Step& b) {
  RegionTimes::install();
  std::array<Measured, 2> m;
  const double lr = 1e-4;
  for (int i = 0; i < o.warmup + o.steps; ++i)
    for (Step* c : {&a, &b}) {
      const bool timed = i >= o.warmup;
      MPI_Barrier(MPI_COMM_WORLD);
      PhaseTimers::global().reset();
      RegionTimes::record(timed && c == &b);
      const double t0 = MPI_Wtime();
      bench::stepOnce(grid, *c, i, lr);
      const double ms = 1e3 * maxOver(MPI_Wtime() - t0);
      const double moved = 1e3 * maxOver(PhaseTimers::global().redistribute);
      RegionTimes::record(false);
      if (!timed) continue;
      Measured& into = m[c == &a ? 0 : 1];
      into.stepMs.push_back(ms);
      into.redistributeMs.push_back(moved);
    }
  return m;
}

// The model's predicted steps of A and B (ms), where a machine file is given; else 0.
std::array<double, 2> predictSteps(const Options& o, const ProcessGrid& grid,
                                   const Configurations& c) {
  std::array<double, 2> predicted{0, 0};
  if (o.machine.empty()) return predicted;
#if HYBRID3D_BENCH_MACHINE_FILES
  const Machine machine = deck::readMachineDeck(o.machine);
  const SetListing listing{"synthetic", 1000};
  int k = 0;
  for (const ModelOptions* mo : {&c.plain, &c.staged}) {
    const RunPlan r = planRun<float>(configOf(o, *mo, grid.numGroups()), grid.dims(),
                                     grid.numGroups(), listing, {});
    predicted[k++] = 1e3 * predictSlowestRank(r, machine).phases.step();
  }
#else
  static_cast<void>(grid);  // parseOptions refused --machine
  static_cast<void>(c);
#endif
  return predicted;
}

// In the step: each redistribution's time per step (its node's forward and backward regions,
// this rank's) on its slowest rank.
std::vector<double> secondsInStep(const std::vector<Moving>& moving, int steps) {
  std::map<std::string, double> seconds;
  for (const auto& [name, t] : RegionTimes::seconds())
    for (const Moving& mv : moving)
      if (name == "hybrid3d::node::forward " + mv.name ||
          name == "hybrid3d::node::backward " + mv.name)
        seconds[mv.name] += t.wall / steps;
  std::vector<double> inStep;
  for (const Moving& mv : moving) inStep.push_back(maxOver(seconds[mv.name]));
  return inStep;
}

// A redistribution run alone: the best time of forward + adjoint (slowest rank), the bytes the
// busiest rank moves, and a copy of as many bytes on that rank.
struct Alone {
  double seconds, bytes, copySeconds;
};

// Each redistribution alone, forward then adjoint, every rank entering together (a barrier
// before each): its own rate, without the waits for other ranks that its share of the step
// holds. The best of several calls, slowest rank; then a copy of as many bytes on that rank.
// (It overwrites the activations: the steps are done.)
std::vector<Alone> measureAlone(Step& b, const std::vector<Moving>& moving) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<Alone> alone;
  auto& g = *b.model.graph;
  std::size_t k = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    auto* node = dynamic_cast<RedistributeNode<float>*>(&g.node(i));
    if (!node) continue;
    const int p = g.inputsOf(i).at(0);
    const auto& in = p < 0 ? g.input() : g.outputOf(std::size_t(p));
    const auto& out = g.outputOf(i);
    double best = 1e30;
    for (int r = 0; r < 5; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      node->forward(b.exec, {&in}, out);
      node->backward(b.exec, {&in}, out, {&in});
      b.exec.fence();
      best = std::min(best, maxOver(MPI_Wtime() - t0));
    }
    struct {
      double bytes;
      int rank;
    } mine{moving[k].bytes, rank}, most{};
    MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    double copy = rank == most.rank ? copySeconds(std::size_t(mine.bytes)) : 0;
    MPI_Bcast(&copy, 1, MPI_DOUBLE, most.rank, MPI_COMM_WORLD);
    alone.push_back({best, most.bytes, copy});
    ++k;
  }
  return alone;
}

// One configuration's line: its step (median, min, max), redistributions, prediction.
void printRow(const std::string& which, const Measured& m, double predict) {
  std::vector<double> s = m.stepMs;
  std::sort(s.begin(), s.end());
  const double med = median(m.stepMs);
  std::printf("  %-34s step %8.1f ms (min %.1f, max %.1f)  redistributions %6.1f ms = %4.1f%%",
              which.c_str(), med, s.front(), s.back(), median(m.redistributeMs),
              100.0 * median(m.redistributeMs) / med);
  if (predict > 0)
    std::printf("  predicted %8.1f ms (%+.0f%%)", predict, 100 * (predict / med - 1));
  std::printf("\n");
}

// B's redistributions, one line each: in the step and alone.
void printRedistributions(const std::vector<Moving>& moving, const std::vector<double>& inStep,
                          const std::vector<Alone>& alone, const Measured& mb) {
  std::printf(
      "  redistributions of B: in the step, ms per step (slowest rank, waits for the other "
      "ranks included) and share of B's step; alone, forward + adjoint with the ranks entering "
      "together: MB moved by the busiest rank (sent and kept), ms, GB/s, a copy of as many "
      "bytes on that rank, rate / copy\n");
  for (std::size_t i = 0; i < moving.size(); ++i) {
    const auto& [sec, bytes, copy] = alone[i];
    const double rate = bytes / sec, copyRate = bytes / copy;
    std::printf(
        "    %-22s in the step %7.2f ms = %4.1f%% | alone %8.2f MB %7.2f ms %7.2f GB/s  copy "
        "%7.2f GB/s  %.2f\n",
        moving[i].name.c_str(), 1e3 * inStep[i], 100.0 * 1e3 * inStep[i] / median(mb.stepMs),
        1e-6 * bytes, 1e3 * sec, 1e-9 * rate, 1e-9 * copyRate, rate / copyRate);
  }
}

int run(const Options& o) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const ProcessGrid grid(MPI_COMM_WORLD, parseGridSpec(o.grid));
  const Configurations c = configurationsOf(o);
  if (rank == 0) printHeader(o, grid, c);
  const auto a = bench::buildTrainingStep(grid, c.plain);
  const auto b = bench::buildTrainingStep(grid, c.staged);
  const std::vector<Moving> moving = redistributions(b->model);
  if (moving.empty())
    fail("the layer grids '", c.stagedName, "' move nothing: not a staged layout");

  const auto [ma, mb] = measureSteps(o, grid, *a, *b);
  const std::array<double, 2> predicted = predictSteps(o, grid, c);
  // The timed steps' regions, read before the redistributions run alone.
  const std::vector<double> inStep = secondsInStep(moving, o.steps);
  const std::vector<Alone> alone = measureAlone(*b, moving);
  if (rank == 0) {
    printRow("A: " + o.grid + " for every layer", ma, predicted[0]);
    printRow("B: " + c.stagedName, mb, predicted[1]);
    std::printf("  B / A step time: %.3f (medians)\n", median(mb.stepMs) / median(ma.stepMs));
    printRedistributions(moving, inStep, alone, mb);
    std::printf(
        "RESULT model=%s size=%d grid=%s batch=%d a_ms=%.3f b_ms=%.3f b_redistribute_ms=%.3f "
        "a_predicted_ms=%.3f b_predicted_ms=%.3f\n",
        o.model.c_str(), o.size, o.grid.c_str(), o.batch, median(ma.stepMs), median(mb.stepMs),
        median(mb.redistributeMs), predicted[0], predicted[1]);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (const int rc = hybrid3d::initMpiWithThreads(&argc, &argv, "bench_layer_grids")) return rc;
  int rc = 0;
  {
    Kokkos::ScopeGuard guard(argc, argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    try {
      rc = run(parse(argc, argv));
    } catch (const std::exception& e) {
      if (rank == 0) std::fprintf(stderr, "bench_layer_grids: %s\n", e.what());
      rc = 1;
    }
  }
  MPI_Finalize();
  return rc;
}
