// bench_conv_layers: time and GFLOP/s of the CosmoFlow convolution layers (docs/design.md section
// 6) at 64^3 and 128^3 input, batch 1, float, 1 rank: forward, backward-data and backward-weights
// separately, for every convolution engine built (kokkos, onednn, cudnn) and for `auto`, the
// choice a training step makes (an engine, and on AVX2 hosts the direct backward-weights
// kernel for layers with few input channels), side by side with
//  - the FP32 FMA peak of one core measured in the same run (core/FmaPeak.hpp): the
//    "% peak" columns are the performance issue's yardstick (60 % for every pass carrying 1 %
//    of the step's convolution FLOPs, 40 % for conv1), and
//  - a plain KokkosBlas::gemm of the pass's own shape (what the kokkos engine's arithmetic
//    alone would reach), on operands of the kokkos engine's chunk width, scaled to all voxels.
// GFLOP/s use process CPU time, which a busy machine distorts far less than wall-clock time;
// in a build whose default memory space is a GPU's, the host only waits, so they use wall-clock
// time (and the "% peak" columns, of one CPU core, say nothing there).
// conv1's backward-data is timed but is no part of a training step (nothing needs the input's
// gradient), so its share of the step is 0.
//
// --precisions adds columns for the 16-bit activation types of mixed precision (Conv3d<bfloat16>,
// Conv3d<float16>: float weights and accumulation): each engine in each precision, one after the
// other for every layer, so that a layer's precisions are timed in one sitting, alternating.
// GFLOP/s count the same arithmetic whatever the storage type.
//
// Usage: bench_conv_layers [--sizes 64,128] [--reps 5] [--workspace-mib 64]
//                          [--engines kokkos,onednn,cudnn,auto] [--precisions float,bfloat16,half]
// The BLAS library actually loaded, the OpenBLAS environment and each engine's implementation
// per pass are printed first: the numbers mean little without them (docs/design.md section 10).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <KokkosBlas3_gemm.hpp>
#include <mpi.h>

#include <hybrid3d/core/FmaPeak.hpp>
#include <hybrid3d/core/Precision.hpp>
#include <hybrid3d/core/MpiThreads.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/layers/Conv3d.hpp>

#include "BlasInfo.hpp"

namespace {

using namespace hybrid3d;
using T = float;
using Layer = Conv3d<T>;
using Clock = std::chrono::steady_clock;

struct ConvLayer {
  std::string name;
  int cin, cout, stride;
  Index extent;  // input extent (cubic)
};

// CosmoFlow's conv1..conv7 and the extent each sees: kernel 3, padding 1, conv4 stride 2; an
// average pool (window 3, stride 2, padding 1) after conv1..conv5, after conv6 when S >= 256
// and after conv7 when S = 512, applied only where its input extent is at least 4.
std::vector<ConvLayer> cosmoflowConvs(Index S) {
  const int channels[8] = {4, 16, 32, 64, 128, 256, 256, 256};
  std::vector<ConvLayer> layers;
  Index e = S;
  for (int i = 1; i <= 7; ++i) {
    const int stride = i == 4 ? 2 : 1;
    layers.push_back({"conv" + std::to_string(i), channels[i - 1], channels[i], stride, e});
    e = windowOutputExtent(e, 3, stride, 1);
    const bool pool = i <= 5 || (i == 6 && S >= 256) || (i == 7 && S == 512);
    if (pool && e >= 4) e = windowOutputExtent(e, 3, 2, 1);
  }
  return layers;
}

// Process CPU time: on a shared machine (other jobs on the cores) it still measures the work
// this process did, where wall-clock time also counts the waiting. With one BLAS thread and the
// Serial backend the two agree on an idle machine.
double cpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

struct Timing {
  double wall, cpu;  // medians, seconds
  // What the rates use: CPU time where the kernels run on the host, wall-clock time where
  // they run on a device the host waits for.
  double seconds() const { return onHost ? cpu : wall; }
  static constexpr bool onHost =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, DefaultMemorySpace>::accessible;
};

template <class F>
Timing median(int reps, F f) {
  f();  // warm-up: first touch of every buffer, BLAS thread start-up
  Kokkos::fence();
  std::vector<double> wall, cpu;
  for (int r = 0; r < reps; ++r) {
    const auto start = Clock::now();
    const double cpuStart = cpuSeconds();
    f();
    Kokkos::fence();
    cpu.push_back(cpuSeconds() - cpuStart);
    wall.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

template <class V>
void fillRandom(const V& v, unsigned seed) {
  auto h = Kokkos::create_mirror_view(v);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (std::size_t i = 0; i < h.size(); ++i) h.data()[i] = u(rng);
  Kokkos::deep_copy(v, h);
}

// Time of a plain gemm C[m, n] = op(A) op(B).
Timing gemmTime(const char* ta, const char* tb, Index m, Index n, Index k, int reps) {
  using M = Kokkos::View<T**, Kokkos::LayoutRight>;
  M a(ta[0] == 'N' ? M("A", m, k) : M("A", k, m));
  M b(tb[0] == 'N' ? M("B", k, n) : M("B", n, k));
  M c("C", m, n);
  fillRandom(a, 1);
  fillRandom(b, 2);
  return median(reps, [&] { KokkosBlas::gemm(ta, tb, T(1), a, b, T(0), c); });
}

// One column of the tables: an engine in a precision.
struct Column {
  ConvEngine engine;
  Precision precision;
  std::string label() const {
    return precision == Precision::Float ? std::string(toString(engine))
                                         : std::string(toString(engine)) + "/" +
                                               (precision == Precision::BFloat16 ? "bf16" : "f16");
  }
};

struct Row {
  std::string name, pass;
  Index in, out;
  int cin, cout;
  std::vector<Timing> engines;  // one per column benchmarked
  Timing gemm;
  double gflop;
  bool inStep;  // part of a training step (conv1's backward-data is not)
};

// The three passes of one layer in activation type A on `engine` (and, for the first column,
// the plain gemms of their shapes).
template <class A>
void timeLayer(const ProcessGrid& grid, const ConvLayer& c, Index S, int reps,
               std::size_t workspace, ConvEngine engine, Row& fwd, Row& data, Row& weights) {
  const DefaultExecutionSpace exec;
  typename Conv3d<A>::Options o;
  o.outChannels = c.cout;
  o.kernel = 3;
  o.stride = c.stride;
  o.padding = 1;
  o.workspaceBytes = workspace;
  o.engine = engine;
  const TensorShape in{1, c.cin, {c.extent, c.extent, c.extent}};
  {
    Conv3d<A> layer(grid, c.name, in, o);
    std::printf("  %s %lld^3 %s %s: %s\n", c.name.c_str(), static_cast<long long>(S),
                toString(engine), toString(precisionOf<A>()), layer.engineDescription().c_str());
    const TensorShape out = layer.outputShape();
    auto x = createDistTensor<A>("x", 1, c.cin, layer.inputDecomposition(), grid.coords(),
                                 layer.inputGhosts());
    auto dx = createDistTensor<A>("dx", 1, c.cin, layer.inputDecomposition(), grid.coords(),
                                  layer.inputGhosts());
    auto y = createDistTensor<A>("y", 1, c.cout, layer.outputDecomposition(), grid.coords());
    auto dy = createDistTensor<A>("dy", 1, c.cout, layer.outputDecomposition(), grid.coords());
    fillRandom(x.view(), 3);
    fillRandom(dy.view(), 4);
    fillRandom(layer.parameters()[0].value, 5);

    const Index V = out.extents[0] * out.extents[1] * out.extents[2];
    const Index K = Index(c.cin) * 27;
    if (fwd.gflop == 0) {
      fwd.gflop = data.gflop = weights.gflop = 2.0 * c.cout * K * V * 1e-9;
      fwd.out = data.out = weights.out = out.extents[0];
      // Plain gemm of each pass's shape over the kokkos chunk width, scaled to all V columns.
      const Index chunk = std::min(V, layer.rowsPerChunk() * out.extents[2]);
      const double scale = double(V) / double(chunk);
      auto scaled = [&](Timing t) { return Timing{t.wall * scale, t.cpu * scale}; };
      fwd.gemm = scaled(gemmTime("N", "N", c.cout, chunk, K, reps));
      data.gemm = scaled(gemmTime("T", "N", K, chunk, c.cout, reps));
      weights.gemm = scaled(gemmTime("N", "T", c.cout, K, chunk, reps));
    }
    fwd.engines.push_back(median(reps, [&] { layer.forward(exec, x, y); }));
    data.engines.push_back(median(reps, [&] { layer.backwardData(exec, dy, dx); }));
    weights.engines.push_back(median(reps, [&] { layer.backwardWeights(exec, x, dy); }));
  }
}

void run(Index S, int reps, std::size_t workspace, const std::vector<Column>& columns,
         std::vector<Row>& rows) {
  ProcessGrid grid(MPI_COMM_SELF, {1, 1, 1});
  for (const ConvLayer& c : cosmoflowConvs(S)) {
    Row fwd{c.name, "forward", c.extent, 0, c.cin, c.cout, {}, {}, 0, true};
    Row data = fwd, weights = fwd;
    data.pass = "bwd-data";
    data.inStep = c.name != "conv1";
    weights.pass = "bwd-weights";
    for (const Column& col : columns)
      withPrecision(col.precision, [&](auto tag) {
        using A = typename decltype(tag)::type;
        timeLayer<A>(grid, c, S, reps, workspace, col.engine, fwd, data, weights);
      });
    rows.push_back(fwd);
    rows.push_back(data);
    rows.push_back(weights);
  }
}

// The command line: sizes, repetitions, kokkos workspace and the table's columns.
struct Options {
  std::vector<Index> sizes{64, 128};
  int reps = 5;
  std::size_t workspace = Layer::Options().workspaceBytes;
  std::vector<Column> columns;
};

// A comma-separated list, each item read by `parse`.
template <class Parse>
auto parseList(const char* text, Parse parse) {
  std::vector<decltype(parse(std::string()))> items;
  std::stringstream ss(text);
  std::string s;
  while (std::getline(ss, s, ',')) items.push_back(parse(s));
  return items;
}

Options parseOptions(int argc, char** argv) {
  Options o;
  std::vector<ConvEngine> engines{ConvEngine::Kokkos};
  if (oneDnnCanRun<T, DefaultMemorySpace>()) engines.push_back(ConvEngine::OneDnn);
  if (cudnnCanRun<T, DefaultMemorySpace>()) engines.push_back(ConvEngine::Cudnn);
  engines.push_back(ConvEngine::Auto);  // what a training step runs (per pass, see above)
  std::vector<Precision> precisions{Precision::Float};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--reps") o.reps = std::max(1, std::atoi(argv[i + 1]));
    if (a == "--workspace-mib") o.workspace = std::size_t(std::atof(argv[i + 1]) * (1 << 20));
    if (a == "--engines")
      engines = parseList(argv[i + 1], [](const std::string& s) { return parseConvEngine(s); });
    if (a == "--precisions")
      precisions = parseList(argv[i + 1], [](const std::string& s) { return parsePrecision(s); });
    if (a == "--sizes")
      o.sizes =
          parseList(argv[i + 1], [](const std::string& s) { return Index(std::atoll(s.c_str())); });
  }
  for (const ConvEngine e : engines)
    for (const Precision p : precisions) {
      if (p == Precision::Double) continue;  // not a training precision of this benchmark
      o.columns.push_back({e, p});
    }
  return o;
}

// One size's table: a line per layer and pass, each column's time, GFLOP/s and share of the
// peak, the plain gemm's; then the step's passes together.
void printTable(const std::vector<Row>& rows, const std::vector<Column>& columns,
                const FmaPeak& peak) {
  double stepFlop = 0;
  for (const Row& r : rows) stepFlop += r.inStep ? r.gflop : 0;
  std::printf("%-6s %-11s %9s %9s %7s %6s", "layer", "pass", "Cin->Cout", "extent", "GFLOP",
              "step%");
  for (const Column& col : columns)
    std::printf(" %9s %8s %6s", (col.label() + " ms").c_str(), "GFLOP/s", "%peak");
  std::printf(" %8s %6s\n", "gemm", "%peak");
  std::vector<double> total(columns.size(), 0.0);  // seconds of the step's passes
  for (const Row& r : rows) {
    const std::string ch = std::to_string(r.cin) + "->" + std::to_string(r.cout);
    const std::string ext = std::to_string(r.in) + "->" + std::to_string(r.out);
    std::printf("%-6s %-11s %9s %9s %7.3f %6.1f", r.name.c_str(), r.pass.c_str(), ch.c_str(),
                ext.c_str(), r.gflop, r.inStep ? 100.0 * r.gflop / stepFlop : 0.0);
    for (std::size_t e = 0; e < columns.size(); ++e) {
      const double t = r.engines[e].seconds(), rate = r.gflop / t;
      std::printf(" %9.2f %8.1f %6.1f", t * 1e3, rate, 100.0 * rate / peak.gflops);
      if (r.inStep) total[e] += t;
    }
    const double gemm = r.gflop / r.gemm.seconds();
    std::printf(" %8.1f %6.1f\n", gemm, 100.0 * gemm / peak.gflops);
  }
  std::printf("%-6s %-11s %9s %9s %7.3f %6.1f", "total", "step passes", "", "", stepFlop, 100.0);
  for (std::size_t e = 0; e < columns.size(); ++e)
    std::printf(" %9.2f %8.1f %6.1f", total[e] * 1e3, stepFlop / total[e],
                100.0 * stepFlop / total[e] / peak.gflops);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (const int rc = hybrid3d::initMpiWithThreads(&argc, &argv, "bench_conv_layers")) return rc;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    const Options o = parseOptions(argc, argv);
    bench::printBlasInfo();
    const FmaPeak peak = measureFmaPeak();
    std::printf("FP32 FMA peak of one core, measured: %.1f GFLOP/s (%s)\n", peak.gflops,
                peak.unit.c_str());
    std::printf(
        "Conv3d, kernel 3, padding 1, batch 1, 1 rank, kokkos workspace %.1f "
        "MiB; median of %d after 1 warm-up; %s time\n",
        double(o.workspace) / (1 << 20), o.reps,
        Timing::onHost ? "process CPU" : "wall-clock (device memory space)");
    for (Index S : o.sizes) {
      std::vector<Row> rows;
      std::printf("\nCosmoFlow input %lld^3, implementations:\n", static_cast<long long>(S));
      run(S, o.reps, o.workspace, o.columns, rows);
      printTable(rows, o.columns, peak);
    }
  }
  MPI_Finalize();
  return 0;
}
