// bench_train_step: time of one whole training step (forward, loss, backward with the gradient
// reductions overlapped, SGD update) of the models of docs/design.md section 6, batch 1, float, on
// synthetic inputs and targets already on the device (no I/O), with everything the trainer
// does per step and nothing else (see stepOnce and src/train/Trainer.cpp).
//
// Per configuration it prints the median, minimum and maximum milliseconds per step (each step
// counted on its slowest rank), the median over steps of that rank's compute / halo / allreduce
// times (hybrid3d::PhaseTimers, as the trainer's progress line), and what a step costs beyond time:
//   - Kokkos allocations (Kokkos Tools allocate-data callback), C++ operator new calls and
//     minor page faults (getrusage ru_minflt) of every step after the first: the design says
//     zero allocation and no first touch inside the step loop (docs/design.md sections 9 and 10).
//     operator new is split as AllocationCounter.hpp does: kernel-label strings, the rest of
//     ours, and oneDNN's own inside its calls (not ours to remove);
//   - the convolutions' FLOPs per step (Graph::stepFlops, all ranks) and the rate they imply,
//     as a share of the FP32 FMA peak of the cores used, measured in the same run
//     (core/FmaPeak.hpp): how close to the machine's limit the step is;
//   - memory per rank: peak RSS above the RSS measured just before the model was built, the
//     bytes Kokkos holds after set-up and at its peak, and the bytes the C allocator hands out
//     (mallinfo2, at the end of set-up and of the steps). With --memory, every rank's figures
//     beside what its model predicts (model/GraphMemory.hpp: activations, their gradients,
//     parameters, the convolution workspace), the largest Kokkos allocations by label, and the
//     same configuration on one rank (rank 0 alone, after the others) for the ratio to 1 rank.
// The BLAS library libblas.so.3 resolved to and OPENBLAS_CORETYPE (unset is a value) come
// first: the numbers mean little without them. One line per configuration starts with RESULT
// for scripts (perf_tests/step_vs_pytorch.sh).
//
// Usage: mpirun -n P bench_train_step [--model cosmoflow|unet3d] [--size S] [--steps N]
//          [--warmup W] [--grid DxHxW|auto] [--with-unet64] [--no-hooks] [--regions] [--memory]
//          [--overlap on|off] [--engine auto|kokkos|onednn|cudnn]
//          [--precision float|double|bfloat16|half] [--recompute none|all|RANGES]
// Without --model: CosmoFlow at 32, 64, 128 and the U-Net at 32 (and 64 with --with-unet64:
// tens of seconds per step on 2 cores). --model without --size runs that model's default sizes.
// --grid: the spatial grid of one sample; the world holds world / P data-parallel groups, each
// with one sample (global mini-batch = groups). Default: all ranks on one sample, shape chosen
// as the trainer's "auto" does. --regions: time per node and per layer pass of rank 0
// (core/RegionTimes.hpp), inclusive, over the timed steps. --overlap: the convolutions'
// halo/compute overlap (Conv3d::Options::overlap; default convOverlapByDefault). --engine: every
// convolution's engine (default auto). --precision: the activations' type (parameters stay
// float for the 16-bit ones; default float). --recompute: Model/recompute (model/Recompute.hpp;
// default none): the activations recomputed in the backward pass instead of held.
#include <malloc.h>
#include <unistd.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <mpi.h>

#include <hybrid3d/core/MpiThreads.hpp>
#include <hybrid3d/comm/GradientReducer.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/FmaPeak.hpp>
#include <hybrid3d/core/PhaseTimers.hpp>
#include <hybrid3d/core/Precision.hpp>
#include <hybrid3d/core/RegionTimes.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/engines/impl/HostWorkspace.hpp>
#include <hybrid3d/model/Models.hpp>
#include <hybrid3d/optim/Sgd.hpp>

#include "AllocationCounter.hpp"
#include "BlasInfo.hpp"
#include "TrainingStep.hpp"

// ---- counters ---------------------------------------------------------------------------------
namespace {

using namespace hybrid3d;
using M = DefaultMemorySpace;
using Exec = DefaultExecutionSpace;

// Kokkos allocations seen by the Tools callbacks (main thread only, as all our allocations).
struct KokkosCounts {
  long long allocations = 0;
  std::int64_t liveBytes = 0, peakBytes = 0;
  // --memory: live bytes per label while the model is set up (the map allocates: never on
  // during the counted steps).
  std::map<std::string, std::int64_t>* byLabel = nullptr;
};
KokkosCounts kokkos;

void onAllocate(const Kokkos_Profiling_SpaceHandle, const char* label, const void*,
                const std::uint64_t size) {
  ++kokkos.allocations;
  kokkos.liveBytes += static_cast<std::int64_t>(size);
  kokkos.peakBytes = std::max(kokkos.peakBytes, kokkos.liveBytes);
  if (kokkos.byLabel) (*kokkos.byLabel)[label] += static_cast<std::int64_t>(size);
}
void onDeallocate(const Kokkos_Profiling_SpaceHandle, const char* label, const void*,
                  const std::uint64_t size) {
  kokkos.liveBytes -= static_cast<std::int64_t>(size);
  if (kokkos.byLabel) (*kokkos.byLabel)[label] -= static_cast<std::int64_t>(size);
}

// Bytes the C allocator has handed out and not taken back (heap and mmapped blocks): Kokkos's
// host allocations, oneDNN's workspace, MPI's buffers, everything.
// (glibc before 2.33 has only mallinfo, whose int fields wrap above 2 GiB.)
std::int64_t allocatorBytes() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
  const struct mallinfo2 m = mallinfo2();
#else
  const struct mallinfo m = mallinfo();
#endif
  return static_cast<std::int64_t>(m.uordblks) + static_cast<std::int64_t>(m.hblkhd);
}

long long minorFaults() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// A field of /proc/self/status in KiB (VmRSS, VmHWM), -1 when absent.
long long statusKiB(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.compare(0, key.size() + 1, key + ":") == 0)
      return std::atoll(line.c_str() + key.size() + 1);
  return -1;
}

// Resets VmHWM to the current RSS (Linux >= 4.0); false where that is refused.
bool resetPeakRss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return bool(f);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Options {
  std::vector<std::pair<std::string, int>> configs;
  int steps = 5, warmup = 2;
  std::string grid = "auto";
  bool hooks = true;
  bool regions = false;
  bool memory = false;
  bool overlap = convOverlapByDefault;  // Conv3d halo/compute overlap
  ConvEngine engine = ConvEngine::Auto;
  Precision precision = Precision::Float;  // of the activations (--precision)
  RecomputeOption recompute;               // --recompute
  double peakGflops = 0;  // FP32 FMA peak of one core, measured at start (rank 0's core)
};

// The model with what the trainer builds around it, at batch 1 (TrainingStep.hpp).
template <class T>
std::unique_ptr<bench::TrainingStepOf<T>> build(const ProcessGrid& grid, const std::string& arch,
                                                int S, const Options& opt) {
  ModelOptions mo;
  mo.convOverlap = opt.overlap;
  mo.convEngine = opt.engine;
  mo.recompute = opt.recompute;
  mo.architecture = arch;
  mo.inputWidth = S;
  mo.batch = 1;
  mo.seed = 7;
  return bench::buildTrainingStep<T>(grid, mo);
}

// --regions: rank 0's regions (RegionTimes), slowest first, as ms per step and share of
// `stepMs`, down to `minShare` of the step.
void printRegions(int steps, double stepMs, double minShare = 0.005) {
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [name, s] : RegionTimes::seconds()) rows.push_back({1e3 * s.wall / steps, name});
  std::sort(rows.rbegin(), rows.rend());
  std::printf(
      "  time per region (rank 0, inclusive, fenced, ms per step, %% of the step, thread CPU "
      "ms per step):\n");
  for (const auto& [ms, name] : rows) {
    if (ms < minShare * stepMs) break;
    std::printf("    %9.2f  %5.1f%%  %9.2f  %s\n", ms, 100.0 * ms / stepMs,
                1e3 * RegionTimes::seconds().at(name).cpu / steps, name.c_str());
  }
}

std::string join(const std::vector<long long>& v) {
  std::ostringstream o;
  for (std::size_t i = 0; i < v.size(); ++i) o << (i ? " " : "") << v[i];
  return o.str();
}

long long maxOver(MPI_Comm comm, long long v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_LONG_LONG, MPI_MAX, comm);
  return v;
}

// One rank's memory in one configuration, in bytes: what its model predicts and what was
// measured (peak RSS and the allocators' counts above the baseline taken before set-up).
struct MemoryRow {
  double activations, activationGradients, parameters, workspace, predicted;
  double kokkosPeak, allocatorSetup, allocatorSteps, peakRss;
};
constexpr int memoryFields = sizeof(MemoryRow) / sizeof(double);

void printLargestAllocations(const std::map<std::string, std::int64_t>& labels, int count) {
  std::vector<std::pair<std::int64_t, std::string>> sorted;
  for (const auto& [label, bytes] : labels)
    if (bytes > 0) sorted.push_back({bytes, label});
  std::sort(sorted.rbegin(), sorted.rend());
  std::printf("  largest Kokkos allocations of rank 0 after set-up (MiB):");
  for (int i = 0; i < count && i < int(sorted.size()); ++i)
    std::printf("%s %s %.2f", i ? "," : "", sorted[i].second.c_str(), sorted[i].first / 1048576.0);
  std::printf("\n");
}

// One configuration as runAs's steps see it: where it runs, the model and the grid.
struct Configuration {
  MPI_Comm world;
  int rank, size;
  bool root;
  std::string arch;
  int S;
  Int3 dims;
  std::string name;  // "cosmoflow S=128"
};

// The memory baseline: taken before anything of the configuration exists.
struct Baseline {
  bool hwmReset;  // VmHWM now starts from here (else it holds the process's peak)
  long long rssKiB;
  std::int64_t kokkos, allocator;  // bytes
};

// Heap memory a previous configuration freed goes back to the system first, or this one would
// reuse it unseen.
Baseline takeBaseline(MPI_Comm world) {
  Kokkos::fence();
  MPI_Barrier(world);
  malloc_trim(0);
  Baseline b;
  b.hwmReset = resetPeakRss();
  b.rssKiB = statusKiB("VmRSS");
  b.kokkos = kokkos.liveBytes;
  b.allocator = allocatorBytes();
  kokkos.peakBytes = kokkos.liveBytes;
  return b;
}

// The training step built, with what its set-up took.
template <class T>
struct SetUp {
  std::unique_ptr<bench::TrainingStepOf<T>> step;
  double seconds;
  std::int64_t kokkosBytes, allocatorBytes;    // above the baseline
  std::map<std::string, std::int64_t> labels;  // --memory, rank 0: Kokkos bytes by label
};

template <class T>
SetUp<T> setUp(const Configuration& c, const ProcessGrid& grid, const Options& opt,
               const Baseline& base) {
  SetUp<T> u;
  if (opt.memory && c.root) kokkos.byLabel = &u.labels;
  const double t0 = MPI_Wtime();
  u.step = build<T>(grid, c.arch, c.S, opt);
  kokkos.byLabel = nullptr;
  MPI_Barrier(c.world);
  u.seconds = MPI_Wtime() - t0;
  u.kokkosBytes = kokkos.liveBytes - base.kokkos;
  u.allocatorBytes = allocatorBytes() - base.allocator;
  return u;
}

// What the steps measured, each step on its slowest rank.
struct Steps {
  std::vector<double> ms, computeMs, haloMs, reduceMs;  // the timed steps
  // Per step after the first, max over ranks: Kokkos allocations, label strings, our other
  // operator new calls, oneDNN's, minor page faults.
  std::vector<long long> allocs, labelNews, news, vendorNews, faults;
  double firstStepMs = 0, lastLoss = 0;
  std::int64_t allocatorBytes = 0;  // above the baseline, the most over the ends of the steps
};

// The slowest rank's time of this step and its split: compute (the rest of its time), halo,
// allreduce.
std::array<double, 4> slowestRankSplit(const Configuration& c, double dt) {
  const double mine[4] = {
      dt, std::max(0.0, dt - PhaseTimers::global().halo - PhaseTimers::global().allreduce),
      PhaseTimers::global().halo, PhaseTimers::global().allreduce};
  std::vector<double> all(4 * std::size_t(c.size));
  MPI_Allgather(mine, 4, MPI_DOUBLE, all.data(), 4, MPI_DOUBLE, c.world);
  std::size_t slowest = 0;
  for (std::size_t r = 1; r < std::size_t(c.size); ++r)
    if (all[4 * r] > all[4 * slowest]) slowest = r;
  return {all[4 * slowest], all[4 * slowest + 1], all[4 * slowest + 2], all[4 * slowest + 3]};
}

template <class T>
Steps runSteps(const Configuration& c, const ProcessGrid& grid, bench::TrainingStepOf<T>& s,
               const Options& opt, const Baseline& base) {
  Steps r;
  const double lr = 1e-4;
  for (int i = 0; i < opt.warmup + opt.steps; ++i) {
    MPI_Barrier(c.world);
    PhaseTimers::global().reset();
    const long long a0 = kokkos.allocations, f0 = minorFaults();
    const bench::AllocationCounts n0 = bench::allocationCounts();
    if (opt.regions) RegionTimes::record(i >= opt.warmup);
    const double start = MPI_Wtime();
    r.lastLoss = bench::stepOnce(grid, s, i, lr);
    const double dt = MPI_Wtime() - start;
    const long long a = kokkos.allocations - a0, f = minorFaults() - f0;
    const bench::AllocationCounts n = bench::allocationCounts() - n0;
    r.allocatorBytes = std::max(r.allocatorBytes, allocatorBytes() - base.allocator);
    const std::array<double, 4> t = slowestRankSplit(c, dt);
    long long counts[5] = {a, n.labels, n.unexplained(), n.vendor, f};
    MPI_Allreduce(MPI_IN_PLACE, counts, 5, MPI_LONG_LONG, MPI_MAX, c.world);
    if (i == 0) r.firstStepMs = 1e3 * t[0];
    if (i > 0) {
      r.allocs.push_back(counts[0]);
      r.labelNews.push_back(counts[1]);
      r.news.push_back(counts[2]);
      r.vendorNews.push_back(counts[3]);
      r.faults.push_back(counts[4]);
    }
    if (i >= opt.warmup) {
      r.ms.push_back(1e3 * t[0]);
      r.computeMs.push_back(1e3 * t[1]);
      r.haloMs.push_back(1e3 * t[2]);
      r.reduceMs.push_back(1e3 * t[3]);
    }
  }
  return r;
}

// The configuration's figures over all ranks: arithmetic, and memory as the most any rank used.
struct Figures {
  long long peakKiB;  // this rank's peak RSS
  double stepGflop;   // the arithmetic the step must do, over all ranks
  long long peakAboveKiB, kokkosSetup, kokkosPeak, allocatorSteps;  // max over ranks
};

template <class T>
Figures gatherFigures(const Configuration& c, const SetUp<T>& u, const Steps& r,
                      const Baseline& base) {
  Figures f;
  f.peakKiB = base.hwmReset ? statusKiB("VmHWM") : [] {
    rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<long long>(ru.ru_maxrss);
  }();
  f.stepGflop = 1e-9 * u.step->model.graph->stepFlops();
  MPI_Allreduce(MPI_IN_PLACE, &f.stepGflop, 1, MPI_DOUBLE, MPI_SUM, c.world);
  f.peakAboveKiB = maxOver(c.world, f.peakKiB - base.rssKiB);
  f.kokkosSetup = maxOver(c.world, u.kokkosBytes);
  f.kokkosPeak = maxOver(c.world, kokkos.peakBytes - base.kokkos);
  f.allocatorSteps = maxOver(c.world, r.allocatorBytes);
  return f;
}

long long sum(const std::vector<long long>& v) {
  long long s = 0;
  for (long long x : v) s += x;
  return s;
}

// Rank 0's lines of one configuration: time, set-up, arithmetic, counts, memory, RESULT.
void printConfiguration(const Configuration& c, int groups, const Options& opt, double setupSeconds,
                        const Steps& r, const Figures& f, bool hwmReset) {
  const double mib = 1.0 / (1 << 20);
  const double rate = f.stepGflop / (1e-3 * median(r.ms)), peak = opt.peakGflops * c.size;
  std::vector<double> sorted = r.ms;
  std::sort(sorted.begin(), sorted.end());
  std::string recomputeWord = toString(opt.recompute);  // one word in the RESULT line
  recomputeWord.erase(std::remove(recomputeWord.begin(), recomputeWord.end(), ' '),
                      recomputeWord.end());
  std::printf(
      "%-16s grid %s x %d group(s), overlap %s, recompute %s: median %.1f ms  min %.1f  max %.1f "
      "per step (%d steps after %d warm-up) | compute %.1f  halo %.1f  allreduce %.1f ms "
      "(medians, slowest rank)\n",
      c.name.c_str(), toString(c.dims).c_str(), groups, opt.overlap ? "on" : "off",
      toString(opt.recompute).c_str(), median(r.ms), sorted.front(), sorted.back(), opt.steps,
      opt.warmup, median(r.computeMs), median(r.haloMs), median(r.reduceMs));
  std::printf("  set-up %.2f s, first step %.1f ms, loss after %d steps %.6g\n", setupSeconds,
              r.firstStepMs, opt.warmup + opt.steps, r.lastLoss);
  std::printf(
      "  arithmetic: %.1f GFLOP per step (convolutions, all ranks) at the median: %.1f "
      "GFLOP/s = %.1f%% of the FP32 FMA peak of %d cores (%.1f GFLOP/s each)\n",
      f.stepGflop, rate, 100.0 * rate / peak, c.size, opt.peakGflops);
  std::printf(
      "  per step after the first (max over ranks): Kokkos allocations [%s]  operator "
      "new: kernel-label strings [%s], other [%s], inside oneDNN's own calls (not ours) "
      "[%s]  minor page faults [%s]\n",
      join(r.allocs).c_str(), join(r.labelNews).c_str(), join(r.news).c_str(),
      join(r.vendorNews).c_str(), join(r.faults).c_str());
  std::printf(
      "  memory per rank (max over ranks): peak RSS %.1f MiB above the %s baseline, "
      "Kokkos bytes %.1f MiB after set-up, %.1f MiB at peak, C allocator %.1f MiB "
      "after the steps\n",
      double(f.peakAboveKiB) / 1024.0,
      hwmReset ? "pre-set-up" : "process-start (VmHWM reset refused)", double(f.kokkosSetup) * mib,
      double(f.kokkosPeak) * mib, double(f.allocatorSteps) * mib);
  std::printf(
      "RESULT model=%s size=%d precision=%s grid=%s groups=%d overlap=%d recompute=%s "
      "median_ms=%.3f "
      "min_ms=%.3f "
      "max_ms=%.3f compute_ms=%.3f halo_ms=%.3f allreduce_ms=%.3f "
      "kokkos_allocs_after_first=%lld label_new_after_first=%lld new_after_first=%lld "
      "onednn_new_after_first=%lld minflt_after_first=%lld "
      "peak_rss_mib=%.1f kokkos_mib=%.1f step_gflop=%.3f core_peak_gflops=%.1f\n",
      c.arch.c_str(), c.S, toString(opt.precision), toString(c.dims).c_str(), groups,
      int(opt.overlap), recomputeWord.c_str(), median(r.ms), sorted.front(), sorted.back(),
      median(r.computeMs), median(r.haloMs), median(r.reduceMs), sum(r.allocs), sum(r.labelNews),
      sum(r.news), sum(r.vendorNews), sum(r.faults), double(f.peakAboveKiB) / 1024.0,
      double(f.kokkosSetup) * mib, f.stepGflop, opt.peakGflops);
}

// Runs one configuration on `world` (grid: opt.grid, or `gridSpec` when given) and returns this
// rank's memory figures.
template <class T>
MemoryRow runAs(MPI_Comm world, const Options& opt, const std::string& arch, int S,
                const std::string& gridSpec) {
  Configuration c{world, 0, 0, false, arch, S, {}, arch + " S=" + std::to_string(S)};
  MPI_Comm_rank(world, &c.rank);
  MPI_Comm_size(world, &c.size);
  c.root = c.rank == 0;
  const std::string spec = gridSpec.empty() ? opt.grid : gridSpec;
  c.dims = spec == "auto" ? autoSpatialGrid(c.size, {S, S, S}) : parseGridSpec(spec);
  const ProcessGrid grid(world, c.dims);

  const Baseline base = takeBaseline(world);
  const SetUp<T> u = setUp<T>(c, grid, opt, base);
  const Steps r = runSteps(c, grid, *u.step, opt, base);
  if (!std::isfinite(r.lastLoss)) fail(c.name, ": the loss is ", r.lastLoss);
  if (opt.regions) RegionTimes::record(false);
  const Figures f = gatherFigures(c, u, r, base);
  if (c.root) {
    printConfiguration(c, grid.numGroups(), opt, u.seconds, r, f, base.hwmReset);
    if (opt.regions) printRegions(opt.steps, median(r.ms));
    if (opt.memory) printLargestAllocations(u.labels, 12);
    std::fflush(stdout);
  }
  if (opt.regions) RegionTimes::clear();
  const GraphMemory predicted = u.step->model.graph->memory();
  return {double(predicted.activations),
          double(predicted.activationGradients),
          double(predicted.parameters),
          double(predicted.workspace),
          double(predicted.total()),
          double(kokkos.peakBytes - base.kokkos),
          double(u.allocatorBytes),
          double(r.allocatorBytes),
          1024.0 * double(f.peakKiB - base.rssKiB)};
}

// The configuration in the activations' precision of opt.
MemoryRow run(MPI_Comm world, const Options& opt, const std::string& arch, int S,
              const std::string& gridSpec = "") {
  return withPrecision(opt.precision, [&](auto tag) {
    return runAs<typename decltype(tag)::type>(world, opt, arch, S, gridSpec);
  });
}

// --memory: the configuration once more on rank 0 alone (the others wait without spinning on
// the cores), then every rank's figures beside the 1-rank ones.
void compareWithOneRank(MPI_Comm world, const Options& opt, const std::string& arch, int S,
                        const MemoryRow& mine) {
  int rank, size;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  MemoryRow one = mine;
  if (size > 1) {
    if (rank == 0) {
      std::printf("  the same on 1 rank (rank 0 alone), for the ratio:\n");
      std::fflush(stdout);
      one = run(MPI_COMM_SELF, opt, arch, S, "1x1x1");
      Impl::HostWorkspace::instance().release();
    }
    MPI_Request done;
    MPI_Ibarrier(world, &done);
    for (int finished = 0; !finished; MPI_Test(&done, &finished, MPI_STATUS_IGNORE))
      if (rank != 0) usleep(20000);
    MPI_Bcast(&one, memoryFields, MPI_DOUBLE, 0, world);
  }
  std::vector<MemoryRow> rows(static_cast<std::size_t>(size));
  MPI_Gather(&mine, memoryFields, MPI_DOUBLE, rows.data(), memoryFields, MPI_DOUBLE, 0, world);
  if (rank != 0) return;
  const double mib = 1.0 / (1 << 20);
  std::printf(
      "  memory per rank (MiB): predicted by the model = activations + their gradients + "
      "parameters (values, gradients) + convolution workspace; measured above the "
      "pre-set-up baseline: Kokkos peak, C allocator after set-up / after the steps, "
      "peak RSS; ratio = peak RSS / the 1-rank peak RSS\n");
  auto line = [&](const char* who, const MemoryRow& r) {
    std::printf(
        "  %-6s predicted %7.1f = %7.1f + %7.1f + %6.1f + %6.1f | Kokkos %7.1f  allocator "
        "%7.1f / %7.1f  peak RSS %7.1f | ratio %.3f (predicted %.3f)\n",
        who, r.predicted * mib, r.activations * mib, r.activationGradients * mib,
        r.parameters * mib, r.workspace * mib, r.kokkosPeak * mib, r.allocatorSetup * mib,
        r.allocatorSteps * mib, r.peakRss * mib, r.peakRss / one.peakRss,
        r.predicted / one.predicted);
  };
  line("1 rank", one);
  for (int r = 0; r < size; ++r) line(("rank " + std::to_string(r)).c_str(), rows[std::size_t(r)]);
  double worst = 0;
  for (const MemoryRow& r : rows) worst = std::max(worst, r.peakRss);
  // Parameters (values and gradients) are replicated on every rank except the first dense
  // layer's column shard: even with everything else divided exactly over the ranks, no halos,
  // the ratio cannot go below this.
  const double floor =
      (rows[0].parameters + (one.predicted - one.parameters) / size) / one.predicted;
  std::printf(
      "  parameters: %.1f MiB on rank 0 (%.1f on 1 rank); with all else divided by %d "
      "ranks and no halos the predicted ratio would be %.3f\n",
      rows[0].parameters * mib, one.parameters * mib, size, floor);
  std::printf(
      "MEMORY model=%s size=%d ranks=%d one_rank_peak_rss_mib=%.1f max_peak_rss_mib=%.1f "
      "ratio=%.4f one_rank_predicted_mib=%.1f predicted_mib=%.1f\n",
      arch.c_str(), S, size, one.peakRss * mib, worst * mib, worst / one.peakRss,
      one.predicted * mib, rows[0].predicted * mib);
  std::fflush(stdout);
}

Options parse(int argc, char** argv) {
  Options o;
  std::string model;
  int size = 0;
  bool unet64 = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail("", a, " needs a value");
      return argv[++i];
    };
    if (a == "--model")
      model = value();
    else if (a == "--size")
      size = std::atoi(value().c_str());
    else if (a == "--steps")
      o.steps = std::atoi(value().c_str());
    else if (a == "--warmup")
      o.warmup = std::atoi(value().c_str());
    else if (a == "--grid")
      o.grid = value();
    else if (a == "--with-unet64")
      unet64 = true;
    else if (a == "--no-hooks")
      o.hooks = false;
    else if (a == "--regions")
      o.regions = true;
    else if (a == "--memory")
      o.memory = true;
    else if (a == "--engine")
      o.engine = parseConvEngine(value());
    else if (a == "--precision")
      o.precision = parsePrecision(value());
    else if (a == "--recompute")
      o.recompute = parseRecompute(value());
    else if (a == "--overlap") {
      const std::string v = value();
      if (v != "on" && v != "off") fail("--overlap takes on or off, not ", v);
      o.overlap = v == "on";
    } else
      fail("unknown option ", a,
           " (--model cosmoflow|unet3d --size S --steps N --warmup W --grid DxHxW|auto "
           "--with-unet64 --no-hooks --regions --memory --overlap on|off --engine E "
           "--precision float|double|bfloat16|half --recompute none|all|RANGES)");
  }
  if (o.steps < 1 || o.warmup < 1) fail("--steps and --warmup must be >= 1");
  auto add = [&](const std::string& m, std::vector<int> sizes) {
    if (size > 0) sizes = {size};
    for (int s : sizes) o.configs.push_back({m, s});
  };
  if (model.empty() || model == "cosmoflow") add("cosmoflow", {32, 64, 128});
  if (model.empty() || model == "unet3d")
    add("unet3d", unet64 ? std::vector<int>{32, 64} : std::vector<int>{32});
  if (o.configs.empty()) fail("unknown model ", model, " (cosmoflow or unet3d)");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  if (const int rc = hybrid3d::initMpiWithThreads(&argc, &argv, "bench_train_step")) return rc;
  int rc = 0;
  {
    Kokkos::ScopeGuard guard(argc, argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    try {
      Options opt = parse(argc, argv);
      // Every rank measures its core at once (thread CPU time: no rank's measurement slows
      // another's); rank 0's figure is the yardstick.
      opt.peakGflops = measureFmaPeak().gflops;
      MPI_Bcast(&opt.peakGflops, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      if (opt.hooks) {
        Kokkos::Tools::Experimental::set_allocate_data_callback(onAllocate);
        Kokkos::Tools::Experimental::set_deallocate_data_callback(onDeallocate);
      }
      if (opt.regions) RegionTimes::install();
      if (rank == 0) {
        std::printf(
            "bench_train_step: %d ranks, execution space %s, %s activations, batch 1 per "
            "data-parallel group, plain SGD; ms per step = slowest rank\n",
            size, Exec::name(), toString(opt.precision));
        bench::printBlasInfo();
        if (!opt.hooks) std::printf("(--no-hooks: Kokkos allocations are not counted)\n");
        if (opt.regions)
          std::printf("(--regions: the region profiler's own operator new calls are counted)\n");
        if (opt.memory)
          std::printf(
              "(--memory: rank 0 runs each configuration once more alone, for the "
              "ratio to 1 rank)\n");
        std::fflush(stdout);
      }
      if (opt.memory && !opt.hooks) fail("--memory needs the Kokkos hooks (drop --no-hooks)");
      for (const auto& [arch, S] : opt.configs) {
        const MemoryRow mine = run(MPI_COMM_WORLD, opt, arch, S);
        // The next configuration starts from nothing: the convolutions of this one are gone.
        Impl::HostWorkspace::instance().release();
        if (opt.memory) compareWithOneRank(MPI_COMM_WORLD, opt, arch, S, mine);
      }
    } catch (const std::exception& e) {
      if (rank == 0) std::fprintf(stderr, "bench_train_step: %s\n", e.what());
      rc = 1;
    }
  }
  MPI_Finalize();
  return rc;
}
