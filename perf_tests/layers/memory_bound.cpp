// bench_memory_bound: the memory-bound kernels (activations, pooling, batch norm, dropout,
// concat, halo pack/unpack, optimiser updates) against the copy bandwidth measured in the same
// run. Each kernel's figure is the
// bytes it must move (read + write, stated per kernel below) divided by its time; the last
// column is that bandwidth over the copy bandwidth of the same size, the figure issue 8 asks
// to be at least 0.5.
//
// Every repetition times a plain Kokkos copy kernel of the kernel's size class and then the
// kernel, back to back, so both see the same machine: on a shared machine the load changes
// from one second to the next, and the ratio of neighbouring timings is far steadier than
// either timing. The table gives medians over the repetitions (ratios: median of the per-rep
// ratios), with the kernel's min and max time to show the noise.
//
// Times are process CPU time, as in bench_conv_layers: with more runnable processes than cores
// wall-clock time also counts the time this process waits for a core, which inflates a kernel
// that computes more per byte far more than the copy, whose time is mostly waiting for memory
// either way. The wall-clock ratio is printed beside it. (With a threaded backend CPU time sums
// the threads: read the wall-clock ratio there.)
//
// Shapes: CosmoFlow's conv1 output (16 x 128^3) and conv2 output (32 x 64^3), float, batch 1,
// one rank (ProcessGrid over MPI_COMM_SELF), tensors with ghost width 1 as the graph allocates
// them. The halo's pack and unpack kernels (Impl::applyBox, what Halo::gather and scatterAdd
// run per neighbour) are timed on the faces a 2-way split along D, H or W exchanges. A face's
// bytes are the 64-byte cache lines it touches in the tensor and the buffer, counted exactly:
// a strided face moves whole lines (a W face one line per 4-byte cell, 16 times its cells),
// whichever way it is written. Each face is set against a copy of those same bytes, so both
// run from the same level of the memory hierarchy (a D face's lines fit in the caches an
// activation does not; a W face's do not).
// The optimisers update CosmoFlow's parameters (S = 128, about 9.4 M), against a copy of that
// size.
//
// Why 32x64^3 reads lower than 16x128^3 for every kernel (measured November 2026, AMD EPYC,
// 2 cores, shared): not the copy reference fitting in a cache (a flat copy over the ghosted
// tensors' whole arrays runs at the reference's GB/s at both sizes), nor the row loops (a row
// copy on tensors without ghosts runs at 0.97-1.07 of it at both sizes), but the ghosted layout:
// the same row copy on ghost-1 tensors runs at 0.72-0.80 at 32x64^3 and 0.85-0.89 at 16x128^3
// (also when it writes the W ghosts, so not partial cache lines). A likely reason, not proven:
// both sizes have 2048 planes of rows, each followed by two ghost rows the streams skip, and
// the cost per plane came out about the same (0.4-0.7 us), so it weighs 4x more at the smaller
// size. The "row copy" lines print it in every run: read the kernels' ratios beside them.
//
// Activation types: float, and the 16-bit types of mixed precision (bfloat16, half = float16),
// which the issue of mixed precision asks to stay at 0.5 of the copy too: their kernels read and
// write 2 bytes a value (counted so), compute in float; a 16-bit activation's copy reference is a
// copy of its own bytes. Argmax and optimiser state stay 4 bytes a value.
//
// With float and a 16-bit type among --types, a second table sets each kernel's 16-bit times
// beside float's: the time over float's (issue 38: at most 0.6, for half the bytes) and each
// type's fraction of the copy bandwidth.
//
// Usage: bench_memory_bound [--reps 20] [--only SUBSTRING] [--types float,bfloat16,half]
// (--only matches "TYPE KERNEL SHAPE")
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/core/MpiThreads.hpp>
#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/layers/Activation.hpp>
#include <hybrid3d/layers/AvgPool3d.hpp>
#include <hybrid3d/layers/BatchNorm3d.hpp>
#include <hybrid3d/layers/Concat.hpp>
#include <hybrid3d/layers/Dropout.hpp>
#include <hybrid3d/layers/MaxPool3d.hpp>
#include <hybrid3d/comm/Halo.hpp>
#include <hybrid3d/optim/Adam.hpp>
#include <hybrid3d/optim/Sgd.hpp>

namespace {

using namespace hybrid3d;
using T = float;  // the copy reference's and the optimisers' scalar
using Clock = std::chrono::steady_clock;
using Flat = Kokkos::View<T*>;

double cpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

struct Seconds {
  double cpu, wall;
};

Seconds seconds(const std::function<void()>& f) {
  const auto start = Clock::now();
  const double cpuStart = cpuSeconds();
  f();
  Kokkos::fence();
  return {cpuSeconds() - cpuStart, std::chrono::duration<double>(Clock::now() - start).count()};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class S>
void fillRandom(const DistTensor<S>& t, unsigned seed) {
  auto h = Kokkos::create_mirror_view(t.view());
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);  // both signs: LeakyReLU's select
  for (std::size_t i = 0; i < h.size(); ++i) h.data()[i] = S(u(rng));
  Kokkos::deep_copy(t.view(), h);
}

// The reference: dst(i) = src(i) over `count` floats, the simplest memory-bound kernel (one read
// and one write per element, unit stride). Moves 2 * count * sizeof(T) bytes.
struct CopyKernel {
  Flat src, dst;
  explicit CopyKernel(Index count) : src("copy src", count), dst("copy dst", count) {
    Kokkos::deep_copy(src, T(1));
    Kokkos::deep_copy(dst, T(0));
  }
  double bytes() const { return 2.0 * double(src.size()) * sizeof(T); }
  void operator()() const {
    const Flat s = src, d = dst;
    Kokkos::parallel_for(
        "hybrid3d::bench::copy",
        Kokkos::RangePolicy<DefaultExecutionSpace, Kokkos::IndexType<Index>>(0, Index(s.size())),
        KOKKOS_LAMBDA(const Index i) { d(i) = s(i); });
  }
};

struct Case {
  std::string type, kernel, shape;
  double bytes;  // what the kernel must move, read + write
  const CopyKernel* copy;
  std::function<void()> run;
};

struct Result {
  double kernelMs, minMs, maxMs, gbs, copyGbs, ratio, wallRatio;
};

Result measure(const Case& c, int reps) {
  c.run();  // warm-up: first touch, halo set-up
  (*c.copy)();
  Kokkos::fence();
  std::vector<double> tk, tc, ratio, wallRatio;
  for (int r = 0; r < reps; ++r) {
    const Seconds copy = seconds(*c.copy);
    const Seconds kernel = seconds(c.run);
    tk.push_back(kernel.cpu);
    tc.push_back(copy.cpu);
    // (kernel bytes / kernel time) / (copy bytes / copy time)
    ratio.push_back(c.bytes * copy.cpu / (c.copy->bytes() * kernel.cpu));
    wallRatio.push_back(c.bytes * copy.wall / (c.copy->bytes() * kernel.wall));
  }
  const double k = median(tk), cp = median(tc);
  return {k * 1e3,
          *std::min_element(tk.begin(), tk.end()) * 1e3,
          *std::max_element(tk.begin(), tk.end()) * 1e3,
          c.bytes / k * 1e-9,
          c.copy->bytes() / cp * 1e-9,
          median(ratio),
          median(wallRatio)};
}

template <class S>
double bytesOf(const DistTensor<S>& t, bool withGhosts) {
  const Index cells =
      withGhosts ? Index(t.view().size()) : Index(t.batch()) * t.channels() * t.owned().size();
  return double(cells) * sizeof(S);
}

// The cache line: the unit in which memory moves between DRAM and the caches.
constexpr Index kLineBytes = 64;

// The distinct cache lines a box of a 5-D view spans (`lo` in local array indices), row by row:
// a row (fixed n, c, d, h) is contiguous along W; different rows never share a line here (rows
// are at least a line apart in the activations measured).
template <class View5>
Index linesTouched(const View5& v, const Index3& lo, const Index3& ext) {
  using S = typename View5::value_type;
  const auto address = [&](Index n, Index c, Index z, Index y, Index x) {
    const Index offset = n * Index(v.stride(0)) + c * Index(v.stride(1)) + z * Index(v.stride(2)) +
                         y * Index(v.stride(3)) + x * Index(v.stride(4));
    return reinterpret_cast<std::uintptr_t>(v.data()) + std::uintptr_t(offset) * sizeof(S);
  };
  Index lines = 0;
  for (Index n = 0; n < Index(v.extent(0)); ++n)
    for (Index c = 0; c < Index(v.extent(1)); ++c)
      for (Index z = lo[0]; z < lo[0] + ext[0]; ++z)
        for (Index y = lo[1]; y < lo[1] + ext[1]; ++y)
          lines += Index(address(n, c, z, y, lo[2] + ext[2] - 1) / kLineBytes -
                         address(n, c, z, y, lo[2]) / kLineBytes) +
                   1;
  return lines;
}

// The lines of the first `count` elements of a flat buffer.
template <class S>
Index linesTouched(const Kokkos::View<S*>& b, Index count) {
  const auto first = reinterpret_cast<std::uintptr_t>(b.data());
  return Index((first + std::uintptr_t(count) * sizeof(S) - 1) / kLineBytes - first / kLineBytes) +
         1;
}

// A copy reference moving `bytes` (read + write) in floats.
const CopyKernel* copyOf(std::vector<std::unique_ptr<CopyKernel>>& copies, double bytes) {
  copies.push_back(std::make_unique<CopyKernel>(Index(bytes / (2 * sizeof(T)))));
  return copies.back().get();
}

// `g`: GhostWidths (the same on every rank) or a layer's GhostMap (each rank's own).
template <class S, class Ghosts>
DistTensor<S> makeTensor(const char* label, int n, int c, const BlockDecomposition& dec,
                         const Int3& at, const Ghosts& g) {
  return createDistTensor<S>(label, n, c, dec, at, g);
}

template <class S>
struct PoolTensors {
  std::shared_ptr<DistTensor<S>> x, dx, y, dy;
};

// One of the two activation size classes.
struct Size {
  const char* name;
  int channels;
  Index extent;
};
constexpr Size kSizes[2] = {{"16x128^3", 16, 128}, {"32x64^3", 32, 64}};
constexpr int N = 1;  // batch

template <class S>
const char* typeNameOf() {
  return std::is_same_v<S, float> ? "float" : std::is_same_v<S, bfloat16> ? "bfloat16" : "half";
}

// What the cases of one size class in activation type S share: the shape, the copy reference
// of one activation's cells, the activations x, y, dy, dx (ghost width 1, as the graph allocates
// them). Layers and tensors are shared_ptrs that the cases' lambdas hold (and so keep alive).
template <class S>
struct SizeCases {
  const ProcessGrid& grid;
  const Size& size;
  TensorShape shape;
  BlockDecomposition dec;
  Int3 at;
  const CopyKernel* copy;
  std::shared_ptr<DistTensor<S>> x, y, dy, dx;
  double cells;  // one activation's owned cells, in bytes
  DefaultExecutionSpace exec;
  std::vector<Case>& cases;

  std::shared_ptr<DistTensor<S>> tensor(const char* label, int channels,
                                        const BlockDecomposition& d, const GhostWidths& g) const {
    return std::make_shared<DistTensor<S>>(makeTensor<S>(label, N, channels, d, at, g));
  }
  // A case of this size class moving `bytes` against its copy reference.
  void add(const std::string& kernel, double bytes, std::function<void()> run) const {
    cases.push_back({typeNameOf<S>(), kernel, size.name, bytes, copy, std::move(run)});
  }
};

template <class S>
SizeCases<S> makeSizeCases(const ProcessGrid& grid, const Size& s, std::vector<Case>& cases,
                           std::vector<std::unique_ptr<CopyKernel>>& copies) {
  const TensorShape shape{N, s.channels, {s.extent, s.extent, s.extent}};
  const BlockDecomposition dec(shape.extents, grid.dims());
  const Int3 at = grid.coords();
  const GhostWidths g1 = GhostWidths::uniform(1);
  const CopyKernel* copy = copyOf(
      copies, 2.0 * double(Index(N) * s.channels * s.extent * s.extent * s.extent) * sizeof(S));
  SizeCases<S> t{grid, s, shape, dec, at, copy, {}, {}, {}, {}, 0, {}, cases};
  t.x = t.tensor("x", s.channels, dec, g1);
  t.y = t.tensor("y", s.channels, dec, g1);
  t.dy = t.tensor("dy", s.channels, dec, g1);
  t.dx = t.tensor("dx", s.channels, dec, g1);
  fillRandom(*t.x, 1);
  fillRandom(*t.dy, 2);
  t.cells = bytesOf(*t.x, false);
  return t;
}

// Diagnostics, not targets: y := x on the owned cells, row by row (Impl::forEachRowCell, as the
// element-wise layers), on the tensors x and y (ghost width 1, as the graph allocates them) and
// on tensors without ghosts: 2 activations each. What the layout itself costs against the flat
// copy (see the header).
template <class S>
void addRowCopyCases(const SizeCases<S>& t) {
  const GhostWidths g0 = GhostWidths::uniform(0);
  auto x0 = t.tensor("x no ghosts", t.size.channels, t.dec, g0);
  auto y0 = t.tensor("y no ghosts", t.size.channels, t.dec, g0);
  fillRandom(*x0, 1);
  const DefaultExecutionSpace exec = t.exec;
  for (const auto& [from, to, name] : {std::make_tuple(t.x, t.y, "row copy, ghost 1"),
                                       std::make_tuple(x0, y0, "row copy, no ghosts")}) {
    const auto xv = from->view(), yv = to->view();
    const auto ox = Impl::ghostOffset(*from), oy = Impl::ghostOffset(*to);
    const Impl::OwnedRows rows(*from);
    t.add(name, 2 * t.cells, [=] {
      Impl::forEachRowCell(
          "hybrid3d::bench::rowCopy", exec, rows,
          KOKKOS_LAMBDA(const Index n, const Index c, const Index z, const Index yy,
                        const Index xx) {
            copyValue(yv(n, c, oy.d + z, oy.h + yy, oy.w + xx),
                      xv(n, c, ox.d + z, ox.h + yy, ox.w + xx));  // as Concat's
          });
    });
  }
}

// LeakyReLU, Dropout and Concat: one pass each way over the owned cells.
template <class S>
void addElementwiseCases(const SizeCases<S>& t) {
  const auto x = t.x, y = t.y, dy = t.dy, dx = t.dx;
  const DefaultExecutionSpace exec = t.exec;
  // LeakyReLU forward: reads x, writes y (owned cells): 2 activations.
  auto relu = std::make_shared<LeakyReLU<S>>(t.grid, "relu", t.shape);
  t.add("LeakyReLU::forward", 2 * t.cells, [=] { relu->forward(exec, *x, *y); });
  // LeakyReLU backwardData: reads x and dy, writes dx: 3 activations.
  t.add("LeakyReLU::backwardData", 3 * t.cells, [=] { relu->backwardData(exec, *x, *dy, *dx); });

  // Dropout (training, keep 0.8; CosmoFlow's rate, though CosmoFlow drops only in the dense
  // part): reads x, writes y: 2 activations; backward the same on (dy, dx).
  auto drop =
      std::make_shared<Dropout<S>>(t.grid, "drop", t.shape, typename Dropout<S>::Options{0.8, 7});
  drop->setStep(3, 0);
  t.add("Dropout::forward", 2 * t.cells, [=] { drop->forward(exec, *x, *y); });
  t.add("Dropout::backwardData", 2 * t.cells, [=] { drop->backwardData(exec, *dy, *dx); });

  // Concat of two halves on channels (U-Net's skip joins): forward reads a and b, writes y
  // (2 activations of y's size); backward reads dy, writes da and db (the same).
  const TensorShape half{N, t.size.channels / 2, t.shape.extents};
  auto cat = std::make_shared<Concat<S>>(t.grid, "cat", half, half);
  auto a = t.tensor("a", half.channels, t.dec, GhostWidths::uniform(1));
  auto b = t.tensor("b", half.channels, t.dec, GhostWidths::uniform(1));
  fillRandom(*a, 3);
  fillRandom(*b, 4);
  t.add("Concat::forward", 2 * t.cells, [=] { cat->forward(exec, *a, *b, *y); });
  t.add("Concat::backwardData", 2 * t.cells, [=] { cat->backwardData(exec, *dy, *a, *b); });
}

// A pool's x and dx (its input ghosts) and y and dy (ghost 1, as a following conv's), x and dy
// filled from `seed`.
template <class S, class Pool>
PoolTensors<S> makePoolTensors(const SizeCases<S>& t, const Pool& pool, unsigned seed) {
  const BlockDecomposition odec(pool.outputShape().extents, t.grid.dims());
  const GhostWidths g1 = GhostWidths::uniform(1);
  const int C = t.size.channels;
  PoolTensors<S> p{std::make_shared<DistTensor<S>>(
                       makeTensor<S>("pool x", N, C, t.dec, t.at, pool.inputGhosts())),
                   std::make_shared<DistTensor<S>>(
                       makeTensor<S>("pool dx", N, C, t.dec, t.at, pool.inputGhosts())),
                   t.tensor("pool y", C, odec, g1), t.tensor("pool dy", C, odec, g1)};
  fillRandom(*p.x, seed);
  fillRandom(*p.dy, seed + 1);
  return p;
}

template <class S>
void addPoolCases(const SizeCases<S>& t) {
  const DefaultExecutionSpace exec = t.exec;
  // AvgPool3d 3/2/1 (CosmoFlow's): forward reads x's local array (owned + ghosts, filled by
  // the halo's zero padding here) and writes y's owned cells (1/8 of x); backward reads dy
  // (1/8) and writes dx's local array (ghosts included: scatterAdd sends them back).
  {
    auto pool = std::make_shared<AvgPool3d<S>>(t.grid, "avgpool", t.shape,
                                               typename AvgPool3d<S>::Options{3, 2, 1, true});
    const PoolTensors pt = makePoolTensors(t, *pool, 5);
    const auto px = pt.x, pdx = pt.dx, py = pt.y, pdy = pt.dy;
    t.add("AvgPool3d::forward", bytesOf(*px, true) + bytesOf(*py, false),
          [=] { pool->forward(exec, *px, *py); });
    t.add("AvgPool3d::backwardData", bytesOf(*pdy, false) + bytesOf(*pdx, true),
          [=] { pool->backwardData(exec, *pdy, *pdx); });
  }
  // MaxPool3d 2/2/0 (MLPerf CosmoFlow's and U-Net's): forward reads x, writes y and the
  // argmax (int32, one per output); backward writes dx (zeros, then the winners: the same
  // lines), reads dy and the argmax.
  {
    auto pool = std::make_shared<MaxPool3d<S>>(t.grid, "maxpool", t.shape,
                                               typename MaxPool3d<S>::Options{2, 2, 0});
    const PoolTensors pt = makePoolTensors(t, *pool, 7);
    const auto px = pt.x, pdx = pt.dx, py = pt.y, pdy = pt.dy;
    const double outCells = bytesOf(*py, false);
    const double argmax = outCells / sizeof(S) * sizeof(int);  // int32, one per output
    t.add("MaxPool3d::forward", bytesOf(*px, true) + outCells + argmax,
          [=] { pool->forward(exec, *px, *py); });
    t.add("MaxPool3d::backwardData", bytesOf(*pdx, true) + outCells + argmax,
          [=] { pool->backwardData(exec, *pdy, *pdx); });
  }
}

// BatchNorm3d (training, U-Net's): forward makes two passes, the statistics (reads x) and the
// normalisation (reads x, writes y): 3 activations; backward one pass for the sums (reads x,
// dy) and one for dx (reads x, dy, writes dx): 5 activations. Measured only.
template <class S>
void addBatchNormCases(const SizeCases<S>& t) {
  const auto x = t.x, y = t.y, dy = t.dy, dx = t.dx;
  const DefaultExecutionSpace exec = t.exec;
  auto bn =
      std::make_shared<BatchNorm3d<S>>(t.grid, "bn", t.shape, typename BatchNorm3d<S>::Options{});
  t.add("BatchNorm3d::forward", 3 * t.cells, [=] { bn->forward(exec, *x, *y); });
  t.add("BatchNorm3d::backward", 5 * t.cells, [=] { bn->backward(exec, *x, *dy, *dx); });
}

// Halo faces: the cells one neighbour receives across a D, H or W cut of the 16 x 128^3
// activation (ghost width 1). Pack reads the owned face and writes the buffer, unpack reads
// the buffer and writes the ghost face. The bytes they must move are the 64-byte lines they
// touch, not 4 bytes a cell: a W face has one cell per line of the tensor (its rows are
// 130 floats apart), so its 1 MiB of cells costs 16 MiB of lines, which the memory system
// moves whichever way the kernel is written. Counted exactly (linesTouched), the buffer's
// lines too; the copy reference of each face moves the same number of bytes, so that both
// work from the same level of the memory hierarchy (a D face's 2 MB, a W face's 18 MB).
template <class S>
void addHaloCases(const ProcessGrid& grid, std::vector<Case>& cases,
                  std::vector<std::unique_ptr<CopyKernel>>& copies) {
  const Size& s = kSizes[0];
  const TensorShape shape{N, s.channels, {s.extent, s.extent, s.extent}};
  const BlockDecomposition dec(shape.extents, grid.dims());
  auto t = std::make_shared<DistTensor<S>>(
      makeTensor<S>("halo t", N, s.channels, dec, grid.coords(), GhostWidths::uniform(1)));
  fillRandom(*t, 11);
  const Index e = s.extent;
  const Index faceCells = Index(N) * s.channels * e * e;
  auto buf = std::make_shared<Kokkos::View<S*>>("halo buffer", faceCells);
  const DefaultExecutionSpace exec;
  struct Face {
    const char* name;
    Index3 owned, ghost, ext;  // first owned face cell, first ghost cell, extents
  };
  const Face faces[3] = {{"D face", {e, 1, 1}, {e + 1, 1, 1}, {1, e, e}},
                         {"H face", {1, e, 1}, {1, e + 1, 1}, {e, 1, e}},
                         {"W face", {1, 1, e}, {1, 1, e + 1}, {e, e, 1}}};
  for (const Face& f : faces) {
    const std::string shapeName = std::string(f.name);
    // Owned and ghost faces of one cut touch the same number of lines up to alignment.
    const double bytes = double(kLineBytes) * double(linesTouched(t->view(), f.owned, f.ext) +
                                                     linesTouched(*buf, faceCells));
    const CopyKernel* copy = copyOf(copies, bytes);
    cases.push_back({typeNameOf<S>(), "Halo pack", shapeName, bytes, copy, [=] {
                       Impl::applyBox<Impl::BoxOp::Pack>("hybrid3d::bench::pack", exec, t->view(),
                                                         *buf, 0, f.owned, f.ext);
                     }});
    cases.push_back({typeNameOf<S>(), "Halo unpack", shapeName, bytes, copy, [=] {
                       Impl::applyBox<Impl::BoxOp::Unpack>("hybrid3d::bench::unpack", exec,
                                                           t->view(), *buf, 0, f.ghost, f.ext);
                     }});
  }
}

// The activation kernels and the halo's faces in activation type S: float, or a 16-bit type
// (2 bytes a value: the bytes moved and the copy references are counted in S's bytes).
template <class S>
void addActivationCases(const ProcessGrid& grid, std::vector<Case>& cases,
                        std::vector<std::unique_ptr<CopyKernel>>& copies) {
  for (const Size& s : kSizes) {
    const SizeCases<S> t = makeSizeCases<S>(grid, s, cases, copies);
    addRowCopyCases(t);
    addElementwiseCases(t);
    addPoolCases(t);
    addBatchNormCases(t);
  }
  addHaloCases<S>(grid, cases, copies);
}

// Optimisers on CosmoFlow's parameters at S = 128 (conv weights without bias, fc weights and
// biases). SGD with momentum reads p, g, the momentum and writes p and the momentum: 5 x the
// parameter bytes; Adam reads p, g, m, v and writes p, m, v: 7 x.
void addOptimiserCases(std::vector<Case>& cases, std::vector<std::unique_ptr<CopyKernel>>& copies) {
  using Named = NamedParameter<T>;
  std::vector<Named> params;
  const Index convs[7][2] = {{4, 16},    {16, 32},   {32, 64},  {64, 128},
                             {128, 256}, {256, 256}, {256, 256}};
  Index count = 0;
  auto add = [&](const std::string& layer, const std::string& name,
                 const std::vector<Index>& shape) {
    params.push_back({layer, createParameter<T>(layer, name, shape)});
    Kokkos::deep_copy(params.back().param.grad, T(0.01));
    count += Index(params.back().param.value.size());
  };
  for (int l = 0; l < 7; ++l)
    add("conv" + std::to_string(l + 1), "weight", {convs[l][1], convs[l][0], 3, 3, 3});
  const Index fcs[3][2] = {{2048, 2048}, {2048, 256}, {256, 4}};
  for (int l = 0; l < 3; ++l) {
    add("fc" + std::to_string(l + 1), "weight", {fcs[l][1], fcs[l][0]});
    add("fc" + std::to_string(l + 1), "bias", {fcs[l][1]});
  }
  copies.push_back(std::make_unique<CopyKernel>(count));
  const CopyKernel* copy = copies.back().get();
  const DefaultExecutionSpace exec;
  const double bytes = double(count) * sizeof(T);
  const std::string shapeName = std::to_string(count / 1000) + "k";
  SgdOptions so;
  so.momentum = 0.9;
  auto sgd = std::make_shared<Sgd<T>>(params, so);
  sgd->step(exec, 1e-3);  // past the first step: the momentum buffer is read from then on
  cases.push_back({"float", "Sgd::step (momentum)", shapeName, 5 * bytes, copy,
                   [=] { sgd->step(exec, 1e-3); }});
  auto adam = std::make_shared<Adam<T>>(params, AdamOptions{});
  cases.push_back(
      {"float", "Adam::step", shapeName, 7 * bytes, copy, [=] { adam->step(exec, 1e-3); }});
}

// The command line.
struct Options {
  int reps = 20;
  std::string only;  // matched against "TYPE KERNEL SHAPE"
  std::vector<std::string> types{"float", "bfloat16", "half"};
};

Options parseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--reps") o.reps = std::max(1, std::atoi(argv[i + 1]));
    if (a == "--only") o.only = argv[i + 1];
    if (a == "--types") {
      o.types.clear();
      std::string list = argv[i + 1];
      for (std::size_t p = 0; p <= list.size();) {
        const std::size_t q = std::min(list.find(',', p), list.size());
        o.types.push_back(list.substr(p, q - p));
        p = q + 1;
      }
    }
  }
  return o;
}

// The cases of activation type `type`; false for a type this benchmark does not know.
bool addTypeCases(const std::string& type, const ProcessGrid& grid, std::vector<Case>& cases,
                  std::vector<std::unique_ptr<CopyKernel>>& copies) {
  if (type == "float")
    addActivationCases<float>(grid, cases, copies);
  else if (type == "bfloat16")
    addActivationCases<bfloat16>(grid, cases, copies);
  else if (type == "half")
    addActivationCases<float16>(grid, cases, copies);
  else
    return false;
  return true;
}

// A measured case, for the side-by-side table of the types.
struct Measured {
  const Case* c;
  Result r;
};

// The table: one line per case that `only` selects, printed as soon as it is measured; returns
// the results.
std::vector<Measured> printCases(const std::vector<Case>& cases, const Options& o) {
  std::vector<Measured> measured;
  std::printf(
      "Memory-bound kernels, batch 1, 1 rank, Kokkos %s; median of %d reps "
      "after 1 warm-up; copy = Kokkos copy kernel of one activation (halo faces: of "
      "the bytes they move, whole cache lines; optimisers: of their own size), timed "
      "before each kernel rep; ms, GB/s and ratio from process CPU time, wall = the "
      "ratio from wall-clock time\n",
      DefaultExecutionSpace::name(), o.reps);
  std::printf("%-8s %-26s %-9s %9s %8s %8s %8s %8s %9s %6s %6s\n", "type", "kernel", "shape",
              "MB moved", "ms med", "ms min", "ms max", "GB/s", "copy GB/s", "ratio", "wall");
  for (const Case& c : cases) {
    if (!o.only.empty() &&
        (c.type + " " + c.kernel + " " + c.shape).find(o.only) == std::string::npos)
      continue;
    const Result r = measure(c, o.reps);
    measured.push_back({&c, r});
    std::printf("%-8s %-26s %-9s %9.1f %8.2f %8.2f %8.2f %8.2f %9.2f %6.2f %6.2f\n", c.type.c_str(),
                c.kernel.c_str(), c.shape.c_str(), c.bytes * 1e-6, r.kernelMs, r.minMs, r.maxMs,
                r.gbs, r.copyGbs, r.ratio, r.wallRatio);
    std::fflush(stdout);
  }
  return measured;
}

// The 16-bit types beside float, one line per kernel and shape that float was measured on:
// each type's median ms, its time over float's (issue 38 asks at most 0.6: half the bytes) and
// its fraction of the copy bandwidth (the "ratio" column above; at least 0.5).
void printTypesSideBySide(const std::vector<Measured>& measured, const Options& o) {
  std::vector<std::string> others;
  for (const std::string& t : o.types)
    if (t != "float") others.push_back(t);
  if (others.empty() || others.size() == o.types.size()) return;  // no float, or only float
  std::printf(
      "\nSide by side (ms: median; /float: the type's ms over float's; copy: fraction "
      "of the copy bandwidth)\n%-26s %-9s %8s %6s",
      "kernel", "shape", "float ms", "copy");
  for (const std::string& t : others)
    std::printf(" %9s %7s %6s", (t + " ms").c_str(), "/float", "copy");
  std::printf("\n");
  const auto find = [&](const std::string& type, const Case& like) -> const Measured* {
    for (const Measured& m : measured)
      if (m.c->type == type && m.c->kernel == like.kernel && m.c->shape == like.shape) return &m;
    return nullptr;
  };
  for (const Measured& f : measured) {
    if (f.c->type != "float" || !find(others[0], *f.c)) continue;
    std::printf("%-26s %-9s %8.2f %6.2f", f.c->kernel.c_str(), f.c->shape.c_str(), f.r.kernelMs,
                f.r.ratio);
    for (const std::string& t : others) {
      const Measured* m = find(t, *f.c);
      if (m)
        std::printf(" %9.2f %7.2f %6.2f", m->r.kernelMs, m->r.kernelMs / f.r.kernelMs, m->r.ratio);
      else
        std::printf(" %9s %7s %6s", "-", "-", "-");
    }
    std::printf("\n");
  }
}

// Kokkos::deep_copy of each copy reference's size, for comparison with the copy kernel.
void printCopies(const std::vector<std::unique_ptr<CopyKernel>>& copies, int reps) {
  for (const auto& copy : copies) {
    std::vector<double> t, k;
    for (int r = 0; r < reps; ++r) {
      t.push_back(seconds([&] { Kokkos::deep_copy(copy->dst, copy->src); }).cpu);
      k.push_back(seconds(*copy).cpu);
    }
    std::printf("copy %.1f MB: Kokkos::deep_copy %.2f GB/s, copy kernel %.2f GB/s (medians)\n",
                copy->bytes() * 1e-6, copy->bytes() / median(t) * 1e-9,
                copy->bytes() / median(k) * 1e-9);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (const int rc = hybrid3d::initMpiWithThreads(&argc, &argv, "bench_memory_bound")) return rc;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    const Options o = parseOptions(argc, argv);
    ProcessGrid grid(MPI_COMM_SELF, {1, 1, 1});
    std::vector<Case> cases;
    std::vector<std::unique_ptr<CopyKernel>> copies;
    for (const std::string& type : o.types)
      if (!addTypeCases(type, grid, cases, copies)) {
        std::fprintf(stderr, "bench_memory_bound: --types: unknown type %s\n", type.c_str());
        return 1;
      }
    addOptimiserCases(cases, copies);
    const std::vector<Measured> measured = printCases(cases, o);
    printTypesSideBySide(measured, o);
    printCopies(copies, o.reps);
  }
  MPI_Finalize();
  return 0;
}
