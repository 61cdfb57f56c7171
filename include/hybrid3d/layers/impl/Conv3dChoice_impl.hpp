#pragma once
// Conv3d's choice of the code each pass runs (declared in layers/Conv3d.hpp): a named engine
// runs every pass; auto takes, per pass, the candidate whose slowest rank is fastest, by times
// measured on this machine once per shape (engines/ConvTimings.hpp). And the report of it.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <mpi.h>

#include <hybrid3d/engines/impl/HostWorkspace.hpp>
#include <hybrid3d/engines/impl/OneDnnWorkspace.hpp>

namespace hybrid3d {

namespace Impl {

// After a warm-up (a pass's first call in a process pays one-off costs: oneDNN's thread pool and
// lazily built reorders, first touches), a pass whose warm-up and first run both took this many
// seconds or more is timed by that run: a model's large layers then cost about two steps each
// to time. Other passes take the fastest of convTimingReps runs (a short pass's noise is larger,
// and one spike must not exclude a candidate).
constexpr double convTimingOneRunSeconds = 1e-3;
constexpr int convTimingReps = 3;

template <class Exec, class Run>
double timeRun(const Exec& exec, const Run& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  exec.fence();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <class Exec, class Run>
double fastestRun(const Exec& exec, const Run& run) {
  const double warmUp = timeRun(exec, run);
  double best = timeRun(exec, run);
  for (int r = 1; r < convTimingReps && std::min(warmUp, best) < convTimingOneRunSeconds; ++r)
    best = std::min(best, timeRun(exec, run));
  return best;
}

// The vendor engine built for T and M as a candidate (Kokkos: none).
template <class T, class M>
constexpr ConvCandidate vendorCandidate() {
  return oneDnnCanRun<T, M>()  ? ConvCandidate::OneDnn
         : cudnnCanRun<T, M>() ? ConvCandidate::Cudnn
                               : ConvCandidate::Kokkos;
}

inline ConvCandidate candidateOf(ConvEngine e) {
  return e == ConvEngine::OneDnn  ? ConvCandidate::OneDnn
         : e == ConvEngine::Cudnn ? ConvCandidate::Cudnn
                                  : ConvCandidate::Kokkos;
}

inline std::string milliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", seconds * 1e3);
  return text;
}

}  // namespace Impl

template <class T, class M>
void Conv3d<T, M>::chooseEngines(const Impl::LocalConvProblem& problem, const TensorShape& input,
                                 MPI_Comm world) {
  const auto& g = window_;
  const Index outputVoxels = g.od * g.oh * g.ow;
  largestOperand_ = largestConvOperand(geometry_.inputShape().batch, g.cin, g.cout,
                                       geometry_.inputLayout().localBox().size(), outputVoxels);
  const Impl::OutputPart wholeBox{{0, 0, 0}, problem.outExtents};
  if (options_.engine != ConvEngine::Auto) {
    engine_ =
        resolveConvEngine<T, M>(options_.engine, problem.layer, outputVoxels, largestOperand_);
    pass_.fill(Impl::candidateOf(engine_));
    whole_ = makePart(wholeBox, problem, false);
    return;
  }
  constexpr ConvCandidate vendor = Impl::vendorCandidate<T, M>();
  beyondVendorLimit_ = vendor != ConvCandidate::Kokkos && largestOperand_ > vendorConvMaxElements;
  const bool measuredHere = chooseByTime(problem, input, world);
#if HYBRID3D_ENABLE_ONEDNN
  // The plan counts oneDNN's share of the shared host workspace wherever oneDNN is a candidate
  // (model/ModelPlan.cpp): a rank that measured built it; one that read its times reserves it
  // too, so that what a rank holds does not depend on the cache.
  if constexpr (vendor == ConvCandidate::OneDnn)
    if (largestOperand_ <= vendorConvMaxElements && problem.batch > 0)
      Impl::HostWorkspace::instance().reserve(Impl::oneDnnWorkspaceBytes(problem));
#endif
  engine_ = anyPassRuns(vendor) && vendor == ConvCandidate::OneDnn  ? ConvEngine::OneDnn
            : anyPassRuns(vendor) && vendor == ConvCandidate::Cudnn ? ConvEngine::Cudnn
                                                                    : ConvEngine::Kokkos;
  // Measuring built every candidate; keep the vendor part only where some pass runs it (the
  // kokkos workspaces are sized again with the overlap's parts, by the constructor).
  col_ = {};
  out_ = {};
  ones_ = {};
  dxSum_ = {};
  if (!measuredHere || holdsVendor() != bool(whole_.vendor))
    whole_ = makePart(wholeBox, problem, false);
}

template <class T, class M>
bool Conv3d<T, M>::chooseByTime(const Impl::LocalConvProblem& problem, const TensorShape& input,
                                MPI_Comm world) {
  const ConvTimes can = candidates();
  bool measuredHere = false;
  ConvTimes times = can;  // a rank without voxels adds nothing to the most over the ranks
  const bool idle = problem.emptyOutput();
  timesFrom_ = "none on this rank";
  if (options_.timer) {
    times = options_.timer(can);
    timesFrom_ = "given";
  } else if (!idle) {
    ConvTimingCache& cache = ConvTimingCache::shared();
    const std::string key = timingShape(problem).key();
    const std::optional<ConvTimes> cached = cache.find(key);
    if (cached && sameCandidates(*cached, can)) {
      times = *cached;
      timesFrom_ = "cached";
    } else {
      times = cache.record(key, measure(can, problem, input));
      timesFrom_ = "measured";
      measuredHere = true;
    }
  }
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  const std::string note = options_.timer ? "" : ConvTimingCache::shared().takeNote();
  if (!note.empty() && rank == 0) std::fprintf(stderr, "%s\n", note.c_str());
  // Every rank takes what the slowest rank's times say (the step waits for it).
  double flat[convPassCount * convCandidateCount];
  for (int p = 0; p < convPassCount; ++p)
    for (int c = 0; c < convCandidateCount; ++c) flat[p * convCandidateCount + c] = times[p][c];
  MPI_Allreduce(MPI_IN_PLACE, flat, convPassCount * convCandidateCount, MPI_DOUBLE, MPI_MAX, world);
  for (int p = 0; p < convPassCount; ++p) {
    for (int c = 0; c < convCandidateCount; ++c) times_[p][c] = flat[p * convCandidateCount + c];
    pass_[p] = fastestCandidate(times_[p]);
  }
  return measuredHere;
}

template <class T, class M>
ConvTimes Conv3d<T, M>::candidates() const {
  const auto& g = window_;
  ConvTimes can = noConvTimes();
  for (auto& pass : can) pass[int(ConvCandidate::Kokkos)] = 0;
  if (Impl::convForwardHostCanRun<T, M>(g.k, g.s, g.cin))
    can[int(ConvPass::Forward)][int(ConvCandidate::Direct)] = 0;
  if (Impl::convWeightsHostCanRun<T, M>(g.k, g.s, g.cin))
    can[int(ConvPass::BackwardWeights)][int(ConvCandidate::Direct)] = 0;
  constexpr ConvCandidate vendor = Impl::vendorCandidate<T, M>();
  if (vendor != ConvCandidate::Kokkos && largestOperand_ <= vendorConvMaxElements)
    for (auto& pass : can) pass[int(vendor)] = 0;
  return can;
}

template <class T, class M>
ConvShape Conv3d<T, M>::timingShape(const Impl::LocalConvProblem& problem) const {
  ConvShape shape;
  shape.batch = problem.batch;
  shape.cin = problem.cin;
  shape.cout = problem.cout;
  shape.inLocal = problem.inLocalExtents;
  shape.out = problem.outExtents;
  shape.kernel = problem.kernel;
  shape.stride = problem.stride;
  shape.padding = options_.padding;
  for (int d = 0; d < 3; ++d) {
    shape.ghostsLo[d] = geometry_.ghosts().lo[d];
    shape.ghostsHi[d] = geometry_.ghosts().hi[d];
  }
  shape.bias = problem.bias;
  shape.precision = problem.activations;
  shape.threads = execution_space().concurrency();
  return shape;
}

template <class T, class M>
ConvTimes Conv3d<T, M>::measure(const ConvTimes& can, const Impl::LocalConvProblem& problem,
                                const TensorShape& input) {
  // Every candidate ready: the vendor part (where one is a candidate) and the kokkos workspaces.
  constexpr ConvCandidate vendor = Impl::vendorCandidate<T, M>();
  const bool vendorCandidate = std::isfinite(can[0][int(vendor)]);
  pass_.fill(vendorCandidate ? vendor : ConvCandidate::Kokkos);
  whole_ = makePart({{0, 0, 0}, problem.outExtents}, problem, false);
  allocateKokkosWorkspaces(input);
  // Zero activations: the arithmetic takes the same time on any values (no denormals).
  const TensorShape& in = geometry_.inputShape();
  const TensorShape& out = geometry_.outputShape();
  const auto& coords = geometry_.coords();
  const tensor_type x(geometry_.viewLabel("timing x"), in.batch, in.channels,
                      geometry_.inputDecomposition(), coords, geometry_.inputGhosts());
  const tensor_type dx(geometry_.viewLabel("timing dx"), in.batch, in.channels,
                       geometry_.inputDecomposition(), coords, geometry_.inputGhosts());
  const tensor_type y(geometry_.viewLabel("timing y"), out.batch, out.channels,
                      geometry_.outputDecomposition(), coords, GhostWidths{});
  const tensor_type dy(geometry_.viewLabel("timing dy"), out.batch, out.channels,
                       geometry_.outputDecomposition(), coords, GhostWidths{});
  const execution_space exec;
  ConvTimes times = noConvTimes();
  for (int p = 0; p < convPassCount; ++p)
    for (int c = 0; c < convCandidateCount; ++c) {
      if (!std::isfinite(can[p][c])) continue;
      pass_[p] = ConvCandidate(c);
      times[p][c] = Impl::fastestRun(exec, [&] {
        if (p == int(ConvPass::Forward)) forwardLocal(exec, x, y);
        if (p == int(ConvPass::BackwardData)) backwardDataLocal(exec, dy, dx);
        if (p == int(ConvPass::BackwardWeights)) backwardWeightsLocal(exec, x, dy);
      });
    }
  // Backward-weights added into the gradients: they start at zero again.
  Impl::zeroFill(exec, weight_.grad);
  if (options_.bias) Impl::zeroFill(exec, bias_.grad);
  exec.fence();
  return times;
}

template <class T, class M>
std::string Conv3d<T, M>::engineDescription() const {
  const std::string kokkos =
      isScalar16<T> ? Impl::concat("kokkos (im2col + ", gemmDescription<M>(), " in float on ",
                                   toString(precisionOf<T>()), " storage)")
                    : "kokkos (im2col + " + gemmDescription<M>() + ")";
  std::string what;
  if (!timesFrom_) {
    what = whole_.vendor ? whole_.vendor->describe() : kokkos;
  } else {
    // auto: per pass, the code taken, its time and the other candidates' (the most over the
    // ranks), then where rank 0's times came from and what the engines held are.
    for (int p = 0; p < convPassCount; ++p) {
      const ConvCandidate taken = pass_[p];
      what += Impl::concat(p ? "; " : "", toString(ConvPass(p)), " ", toString(taken), " ",
                           Impl::milliseconds(times_[p][int(taken)]), " ms");
      std::string others;
      for (int c = 0; c < convCandidateCount; ++c)
        if (c != int(taken) && std::isfinite(times_[p][c]))
          others += Impl::concat(others.empty() ? "" : ", ", toString(ConvCandidate(c)), " ",
                                 Impl::milliseconds(times_[p][c]));
      if (!others.empty()) what += " (" + others + ")";
    }
    what += Impl::concat(" [", timesFrom_, "]");
    if (whole_.vendor) what += "; " + whole_.vendor->describe();
    if (anyPassRuns(ConvCandidate::Kokkos)) what += "; " + kokkos;
    if (anyPassRuns(ConvCandidate::Direct)) what += "; direct = the AVX2 + FMA host kernels";
  }
  if (beyondVendorLimit_)
    what += Impl::concat("; auto: this rank's largest operand, ", largestOperand_,
                         " elements, is beyond the vendor engines' 32-bit index limit");
  return overlaps() ? what + Impl::concat(", halo overlapped: interior + ", shell_.size(),
                                          " shell slab(s)")
                    : what;
}

}  // namespace hybrid3d
