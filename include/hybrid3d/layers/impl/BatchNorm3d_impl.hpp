#pragma once
// Definitions of BatchNorm3d's members (included by BatchNorm3d.hpp; explicit instantiations
// in src/layers/BatchNorm3d.cpp).
//
// Numerics of the batch statistics: one pass of SHIFTED sums, S1 = sum(x - K) and
// S2 = sum((x - K)^2), accumulated in double, with K = the channel's running mean; then
// mean = K + S1/n and var = S2/n - (S1/n)^2. Why: plain one-pass sums lose about
// log10((mean/std)^2) digits to cancellation, while the exact two-pass form (mean first, then
// sum((x - mean)^2)) costs a second allreduce and a second sweep over x every step. The running
// mean is the same on every rank of the statistics communicator (replicated state, no extra
// message) and approaches the batch mean after a few steps, so the shifted sums keep nearly all
// digits at the price of the one-pass method; the double accumulators make even the first step
// (K = 0) exact to ~1e-16 (mean/std)^2, far below float's resolution.

#include <cmath>

#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/ProfilingRegion.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>
#include <hybrid3d/kernels/HostRows.hpp>

namespace hybrid3d {

namespace Impl {

// Two sums reduced together by a team (S1 and S2 forward; sum(dy) and sum(dy*xhat) backward).
struct SumPair {
  double a = 0, b = 0;
  KOKKOS_INLINE_FUNCTION SumPair() {}
  KOKKOS_INLINE_FUNCTION SumPair(double a_, double b_) : a(a_), b(b_) {}
  KOKKOS_INLINE_FUNCTION SumPair& operator+=(const SumPair& o) {
    a += o.a;
    b += o.b;
    return *this;
  }
  // Kokkos 3.x joins team partial results through volatile references.
  KOKKOS_INLINE_FUNCTION void operator+=(const volatile SumPair& o) volatile {
    a += o.a;
    b += o.b;
  }
};

// L pairs of running sums: a row's cells w = L*q + l go to lane l, so that the L sums are
// independent chains. A single pair of double sums is one chain of dependent additions (the
// compiler may not reorder them), about 4 cycles per cell, which held BatchNorm3d's statistics
// well below the copy bandwidth (docs/performance-notes.md, "Batch norm").
template <int L>
struct SumLanes {
  double a[L], b[L];
  KOKKOS_INLINE_FUNCTION SumLanes() {
    for (int l = 0; l < L; ++l) a[l] = b[l] = 0;
  }
  KOKKOS_INLINE_FUNCTION SumLanes& operator+=(const SumLanes& o) {
    for (int l = 0; l < L; ++l) {
      a[l] += o.a[l];
      b[l] += o.b[l];
    }
    return *this;
  }
  KOKKOS_INLINE_FUNCTION void operator+=(const volatile SumLanes& o) volatile {
    for (int l = 0; l < L; ++l) {
      a[l] += o.a[l];
      b[l] += o.b[l];
    }
  }
  KOKKOS_INLINE_FUNCTION SumPair total() const {
    SumPair s;
    for (int l = 0; l < L; ++l) s += SumPair(a[l], b[l]);
    return s;
  }
};

// One row's pair of sums on a host backend, in SumLanes' order (lane l takes the cells
// w = L*q + l, the lanes are then added in order from zero, the cells past the last whole group
// of L after them), in plain loops over local arrays. Through Kokkos' vector-range reduction the
// compiler kept the lanes in a SumLanes on the stack and read them back in pairs that straddle
// two of its 16-byte stores (a store-forwarding stall each): in a profile of the forward at
// 32x64^3 (64 cells a row) those reloads took as long as the row's cells. The two totals are
// separate chains, each in lane order, so the sums keep every bit.
template <int L, class CellPair>
KOKKOS_INLINE_FUNCTION SumPair rowSumsInLanes(const CellPair& cell, Index n, Index c, Index d,
                                              Index h, Index W) {
  double a[L], b[L];
  for (int l = 0; l < L; ++l) a[l] = b[l] = 0;
  for (Index q = 0; q < W / L; ++q)
    for (int l = 0; l < L; ++l) {
      const SumPair p = cell(n, c, d, h, L * q + l);
      a[l] += p.a;
      b[l] += p.b;
    }
  double ta = 0, tb = 0;
  for (int l = 0; l < L; ++l) ta += a[l];
  for (int l = 0; l < L; ++l) tb += b[l];
  SumPair row(ta, tb);
  for (Index w = L * (W / L); w < W; ++w) row += cell(n, c, d, h, w);
  return row;
}

// 1/sqrt(v) inside kernels; Kokkos moved sqrt from Kokkos::Experimental to Kokkos in 3.7.
KOKKOS_INLINE_FUNCTION double rsqrt(double v) {
#if KOKKOS_VERSION >= 30700
  return 1.0 / Kokkos::sqrt(v);
#else
  return 1.0 / Kokkos::Experimental::sqrt(v);
#endif
}

// A channel's coefficients, read once per row of cells (Impl::forEachRowCell): a load inside
// the vectorised cell loop would be repeated per cell (the compiler cannot hoist it past the
// stores) and cost a run-time alias check. The 5-D MDRange over cells these kernels used ran
// well below the copy bandwidth (docs/performance-notes.md, "Batch norm").
template <class T>
struct ChannelCoefficients {
  T mean, invstd, a, b;
};

// Ghost widths on the low side: local index = owned-relative index + lo.
struct LocalOffset {
  Index d, h, w;
};
template <class T, class M>
LocalOffset localOffset(const DistTensor<T, M>& t) {
  return {t.ghosts().lo[0], t.ghosts().lo[1], t.ghosts().lo[2]};
}

}  // namespace Impl
}  // namespace hybrid3d

namespace Kokkos {
template <>
struct reduction_identity<hybrid3d::Impl::SumPair> {
  KOKKOS_FORCEINLINE_FUNCTION static hybrid3d::Impl::SumPair sum() { return {}; }
};
}  // namespace Kokkos

namespace hybrid3d {

namespace Impl {

// BatchNorm3d's kernels that its private member functions need are free functions here: nvcc
// rejects an extended __host__ __device__ lambda (KOKKOS_LAMBDA) whose enclosing function is a
// private or protected member of its class. The private members pass them the layer's buffers.

// batchNormChannelSums' per-slab sums on a host execution space: the same sums in the same
// order (a slab's rows from h = 0, each in SumLanes' order), one work item per slab, each row
// built for AVX2 where the CPU has it (kernels/HostRows.hpp): the 16-bit types' conversions
// vectorise there; adds in double in a fixed order, no FMA, so the bits do not depend on it.
template <int L, class ExecSpace, class M, class CellPair>
void batchNormSlabSumsOnHost(const ExecSpace& exec, std::string_view label, Index N, Index C,
                             const Index3& e, const Kokkos::View<double***, M>& partial,
                             const CellPair& cell) {
  const Index D = e[0], H = e[1], W = e[2];
  const auto rowSums =
      [=](const Index n, const Index c, const Index d, const Index h)
          HYBRID3D_HOST_INLINE_LAMBDA { return rowSumsInLanes<L>(cell, n, c, d, h, W); };
  const auto run = hostRowFunction<decltype(rowSums)>(bestHostIsa());
  Kokkos::parallel_for(Impl::kernelLabel(label, "::slabs"), rangePolicy(exec, 0, N * C * D),
                       [=](const Index slab) {
                         const Index d = slab % D, c = (slab / D) % C, n = slab / (D * C);
                         SumPair s;
                         for (Index h = 0; h < H; ++h) s += run(rowSums, n, c, d, h);
                         partial(c, n * D + d, 0) = s.a;
                         partial(c, n * D + d, 1) = s.b;
                       });
}

// sums[c] and sums[C + c] := the sums over channel c of the pair cell(n, c, d, h, w) returns,
// (n, d, h, w) running over N samples times the owned box of extents `e` (0-based).
// partial [C, N*e[0], 2] is the workspace of the sums per (n, d) slab.
template <class ExecSpace, class M, class CellPair>
void batchNormChannelSums(const ExecSpace& exec, std::string_view label, Index N, Index C,
                          const Index3& e, const Kokkos::View<double***, M>& partial,
                          const Kokkos::View<double*, M>& sums, const CellPair& cell) {
  const Index D = e[0], H = e[1], W = e[2];
  // One team per (n, c, d) slab of H*W cells, contiguous in memory: enough teams to fill a GPU
  // even for one sample and few channels, and a fixed summation order. Threads take rows (h),
  // vector lanes the cells along W (no index division per cell).
  // Host backends run a row as one loop: 8 lanes of sums there (SumLanes); GPUs reduce over
  // their vector lanes already.
  constexpr bool host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible;
  constexpr int L = host ? 8 : 1;
  if constexpr (host) batchNormSlabSumsOnHost<L>(exec, label, N, C, e, partial, cell);
  if (!host && N * C * D > 0) {  // not an else: nvcc rejects a KOKKOS_LAMBDA in `if constexpr`
    using Policy = Kokkos::TeamPolicy<ExecSpace>;
    using Member = typename Policy::member_type;
    Kokkos::parallel_for(
        Impl::kernelLabel(label, "::slabs"),
        Policy(exec, static_cast<int>(N * C * D), Kokkos::AUTO, Kokkos::AUTO),
        KOKKOS_LAMBDA(const Member& team) {
          const Index slab = team.league_rank();
          const Index d = slab % D, c = (slab / D) % C, n = slab / (D * C);
          SumPair s;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, H),
              [&](const Index h, SumPair& acc) {
                if (host) {
                  acc += rowSumsInLanes<L>(cell, n, c, d, h, W);
                  return;
                }
                SumLanes<L> lanes;
                Kokkos::parallel_reduce(
                    Kokkos::ThreadVectorRange(team, W / L),
                    [&](const Index q, SumLanes<L>& r) {
                      for (int l = 0; l < L; ++l) {
                        const SumPair p = cell(n, c, d, h, L * q + l);
                        r.a[l] += p.a;
                        r.b[l] += p.b;
                      }
                    },
                    lanes);
                SumPair row = lanes.total();
                for (Index w = L * (W / L); w < W; ++w) row += cell(n, c, d, h, w);
                acc += row;
              },
              s);
          Kokkos::single(Kokkos::PerTeam(team), [&]() {
            partial(c, n * D + d, 0) = s.a;
            partial(c, n * D + d, 1) = s.b;
          });
        });
  }
  const Index slabs = N * D;
  Kokkos::parallel_for(
      Impl::kernelLabel(label, "::channels"), rangePolicy(exec, 0, C), KOKKOS_LAMBDA(const int c) {
        double a = 0, b = 0;
        for (Index j = 0; j < slabs; ++j) {
          a += partial(c, j, 0);
          b += partial(c, j, 1);
        }
        sums(c) = a;
        sums(C + c) = b;
      });
}

// y := (x - mean) * invstd * gamma + beta on host memory, as forward's portable kernel: the
// same float operations per cell (no FMA), rows of pointers (kernels/HostRows.hpp), y rounded
// once.
template <class T, class M, class P>
void batchNormNormalizeOnHost(const typename M::execution_space& exec, const DistTensor<T, M>& x,
                              const DistTensor<T, M>& y, const Kokkos::View<double*, M>& mean,
                              const Kokkos::View<double*, M>& invstd,
                              const Kokkos::View<P*, M>& gamma, const Kokkos::View<P*, M>& beta) {
  using R = ComputeOf<T>;
  const auto xr = hostRowStart(x), yr = hostRowStart(y);
  const Index width = x.owned().extents()[2];
  const HostIsa isa = bestHostIsa();
  forEachOwnedRowOnHost(
      "hybrid3d::BatchNorm3d::forward::normalize", exec, OwnedRows(x), isa,
      [=](const Index n, const Index c, const Index z, const Index yy) HYBRID3D_HOST_INLINE_LAMBDA {
        const R m = R(mean(c)), s = R(invstd(c)), a = R(gamma(c)), b = R(beta(c));
        mapRow(isa, width, xr.at(n, c, z, yy), yr.at(n, c, z, yy),  // y may be x
               [=](const auto& v) HYBRID3D_HOST_INLINE_LAMBDA { return (v - m) * s * a + b; });
      });
}

// The backward sums over this rank's cells: sums[c] := sum(dy), sums[C + c] := sum(dy * xhat),
// xhat from the forward's statistics (mean, invstd).
template <class T, class M>
void batchNormGradientSums(const typename M::execution_space& exec, const DistTensor<T, M>& x,
                           const DistTensor<T, M>& dy, const Kokkos::View<double*, M>& mean,
                           const Kokkos::View<double*, M>& invstd,
                           const Kokkos::View<double***, M>& partial,
                           const Kokkos::View<double*, M>& sums) {
  const auto xv = x.view();
  const auto dyv = dy.view();
  const LocalOffset xo = localOffset(x), yo = localOffset(dy);
  batchNormChannelSums(
      exec, "hybrid3d::BatchNorm3d::backward::sums", x.batch(), x.channels(), x.owned().extents(),
      partial, sums, KOKKOS_LAMBDA(Index n, Index c, Index d, Index h, Index w) {
        const double g = dyv(n, c, d + yo.d, h + yo.h, w + yo.w);
        const double xhat = (double(xv(n, c, d + xo.d, h + xo.h, w + xo.w)) - mean(c)) * invstd(c);
        return SumPair(g, g * xhat);
      });
}

// dgamma[c] += sums[C + c] (sum(dy * xhat)), dbeta[c] += sums[c] (sum(dy)).
template <class ExecSpace, class M, class GradView>
void batchNormAddParameterGrads(const ExecSpace& exec, const Kokkos::View<double*, M>& sums,
                                const GradView& dgamma, const GradView& dbeta) {
  using T = typename GradView::non_const_value_type;
  const Index C = static_cast<Index>(dgamma.extent(0));
  Kokkos::parallel_for(
      Impl::kernelLabel("hybrid3d::BatchNorm3d::backwardWeights"), rangePolicy(exec, 0, C),
      KOKKOS_LAMBDA(const int c) {
        dgamma(c) += T(sums(C + c));
        dbeta(c) += T(sums(c));
      });
}

// Training (batchStatistics): dx = gamma*invstd * (dy - sum(dy)/n - xhat * sum(dy*xhat)/n), the
// sums global over the statistics communicator (sums must hold them), n = count. Inference:
// dx = gamma*invstd * dy.
template <class T, class M>
void batchNormApplyDataGradient(const typename M::execution_space& exec, const DistTensor<T, M>& x,
                                const DistTensor<T, M>& dy, const DistTensor<T, M>& dx,
                                const Kokkos::View<double*, M>& mean,
                                const Kokkos::View<double*, M>& invstd,
                                const Kokkos::View<ParamOf<T>*, M>& gamma,
                                const Kokkos::View<double*, M>& sums, bool batchStatistics,
                                double count) {
  using R = ComputeOf<T>;  // float for the 16-bit types: dx rounded once
  const Index3 e = x.owned().extents();
  const Index N = x.batch(), C = x.channels();
  if (N * C * e[0] * e[1] * e[2] == 0) return;
  const auto xv = x.view();
  const auto dyv = dy.view();
  const auto dxv = dx.view();
  const LocalOffset xo = localOffset(x), yo = localOffset(dy), dxo = localOffset(dx);
  const double n = count;
  const OwnedRows rows(N, C, e);
  constexpr bool host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename M::memory_space>::accessible;
  if constexpr (host) {  // the same operations on pointers (kernels/HostRows.hpp), no FMA
    const auto xr = hostRowStart(x), dyr = hostRowStart(dy), dxr = hostRowStart(dx);
    const Index width = e[2];
    const HostIsa isa = bestHostIsa();
    forEachOwnedRowOnHost(
        "hybrid3d::BatchNorm3d::backwardData", exec, rows, isa,
        [=](const Index nn, const Index c, const Index z, const Index yy)
            HYBRID3D_HOST_INLINE_LAMBDA {
              const T* in = xr.at(nn, c, z, yy);
              const T* g = dyr.at(nn, c, z, yy);  // dx may be dy
              T* out = dxr.at(nn, c, z, yy);
              const R s = R(invstd(c)), scale = gamma(c) * s;
              if (!batchStatistics) {
                const R a = gamma(c) * R(invstd(c));
                mapRow(isa, width, g, out,
                       [a](const auto& v) HYBRID3D_HOST_INLINE_LAMBDA { return a * v; });
                return;
              }
              const R m = R(mean(c)), a = R(sums(c) / n), b = R(sums(C + c) / n);
              // A generic lambda: floats, or eight lanes (kernels/HostFusedRows.hpp).
              mapRows(isa, width, g, in, out,
                      [=](const auto& gw, const auto& v) HYBRID3D_HOST_INLINE_LAMBDA {
                        const auto xhat = (v - m) * s;
                        return scale * (gw - (a + xhat * b));
                      });
            });
    return;
  }
  if (batchStatistics) {
    forEachRowCell(
        "hybrid3d::BatchNorm3d::backwardData", exec, rows,
        // a, b: sum(dy) / n and sum(dy * xhat) / n.
        KOKKOS_LAMBDA(Index, const Index c, Index, Index) {
          return ChannelCoefficients<R>{R(mean(c)), R(invstd(c)), R(sums(c) / n),
                                        R(sums(C + c) / n)};
        },
        KOKKOS_LAMBDA(const Index nn, const Index c, const Index d, const Index h, const Index w,
                      const ChannelCoefficients<R>& k) {
          const R scale = gamma(c) * k.invstd;
          R g = R(dyv(nn, c, d + yo.d, h + yo.h, w + yo.w));
          const R xhat = (R(xv(nn, c, d + xo.d, h + xo.h, w + xo.w)) - k.mean) * k.invstd;
          g -= k.a + xhat * k.b;
          dxv(nn, c, d + dxo.d, h + dxo.h, w + dxo.w) = T(scale * g);
        });
  } else {
    forEachRowCell(
        "hybrid3d::BatchNorm3d::backwardData", exec, rows,
        // a: gamma * invstd.
        KOKKOS_LAMBDA(Index, const Index c, Index, Index) {
          return ChannelCoefficients<R>{R(mean(c)), R(invstd(c)), gamma(c) * R(invstd(c)), R(0)};
        },
        KOKKOS_LAMBDA(const Index nn, const Index c, const Index d, const Index h, const Index w,
                      const ChannelCoefficients<R>& k) {
          dxv(nn, c, d + dxo.d, h + dxo.h, w + dxo.w) =
              T(k.a * R(dyv(nn, c, d + yo.d, h + yo.h, w + yo.w)));
        });
  }
}

}  // namespace Impl

template <class T, class M>
BatchNorm3d<T, M>::BatchNorm3d(const LayerGrid& grid, const std::string& name,
                               const TensorShape& input, const Options& options)
    : options_(options) {
  LayerNaming naming = LayerNaming::quoted("BatchNorm3d", name);
  const std::string& label = naming.label;
  if (input.batch < 0 || input.channels < 1)
    fail(label, ": needs batch >= 0 and channels >= 1, got batch ", input.batch, " and ",
         input.channels, " channels");
  for (int d = 0; d < 3; ++d)
    if (input.extents[d] < 1)
      fail(label, ": input extents ", toString(input.extents), " must all be >= 1");
  if (!(options.momentum >= 0 && options.momentum <= 1))
    fail(label, ": momentum ", options.momentum, " outside [0, 1]");
  if (!(options.eps > 0)) fail(label, ": eps ", options.eps, " must be > 0");
  // Element-wise in space: the output has the input's shape, and no ghosts are read.
  geometry_ = SpatialGeometry(std::move(naming), grid.dims(), grid.coords(), input, input,
                              InputGhosts::Any);
  const Box3& owned = geometry_.inputOwned();
  const bool global = options.statistics == Statistics::Global;
  // Per group: the whole spatial group, every sub-grid of a layer grid (grid/LayerGrid.hpp).
  comm_ = OwnedComm(global ? grid.worldComm() : grid.groupComm());
  // The cells each rank holds, counted over the communicator: whatever the layout, every cell
  // of every sample once (a rank in no sub-grid holds none).
  count_ =
      sumOverRanks(double(input.batch) * double(grid.active() ? owned.size() : 0), comm_.get());

  const Index C = input.channels;
  using P = ParamOf<T>;
  weight_ = createParameter<P, M>(name, "weight", {C}, options.affine);
  bias_ = createParameter<P, M>(name, "bias", {C}, options.affine);
  runningMean_ = createParameter<P, M>(name, "running_mean", {C}, false);
  runningVar_ = createParameter<P, M>(name, "running_var", {C}, false);
  // Without affine, weight and bias stay at 1 and 0 and are not exposed: the kernels need no
  // second path.
  Kokkos::deep_copy(weight_.value, P(1));
  Kokkos::deep_copy(bias_.value, P(0));
  Kokkos::deep_copy(runningMean_.value, P(0));
  Kokkos::deep_copy(runningVar_.value, P(1));

  partial_ = Kokkos::View<double***, M>(geometry_.viewLabel("partial sums"), C,
                                        Index(input.batch) * owned.extent(0), 2);
  sums_ = Kokkos::View<double*, M>(geometry_.viewLabel("sums"), 2 * C);
  sumsAllreduce_ = StagedAllreduce<double, M>(geometry_.viewLabel("sums"), sums_.size());
  mean_ = Kokkos::View<double*, M>(geometry_.viewLabel("mean"), C);
  invstd_ = Kokkos::View<double*, M>(geometry_.viewLabel("invstd"), C);
}

template <class T, class M>
std::vector<Parameter<ParamOf<T>, M>> BatchNorm3d<T, M>::parameters() const {
  if (!options_.affine) return {};
  return {weight_, bias_};
}

template <class T, class M>
void BatchNorm3d<T, M>::forward(const execution_space& exec, const tensor_type& x,
                                const tensor_type& y) {
  geometry_.checkInput(x, "input");
  geometry_.checkOutput(y, "output");
  const int C = geometry_.inputShape().channels;
  const auto mean = mean_, invstd = invstd_;
  const auto rm = runningMean_.value, rv = runningVar_.value;
  const double eps = options_.eps;
  using P = ParamOf<T>;
  if (replay_) {  // mean_ and invstd_ hold the statistics of the step's first forward
    if (!haveForward_ || forwardTraining_ != training_)
      fail(geometry_.label(), ": a recomputed forward needs a forward in the same mode before it");
  } else if (training_) {
    if (count_ <= 1)
      fail(geometry_.label(), ": training needs more than one value per channel (batch ",
           geometry_.inputShape().batch, ", extents ", toString(geometry_.inputShape().extents),
           ")");
    const auto xv = x.view();
    const Impl::LocalOffset xo = Impl::localOffset(x);
    Impl::batchNormChannelSums(
        exec, "hybrid3d::BatchNorm3d::forward::statistics", Index(geometry_.inputShape().batch),
        Index(C), geometry_.inputOwned().extents(), partial_, sums_,
        KOKKOS_LAMBDA(Index n, Index c, Index d, Index h, Index w) {
          const double v = double(xv(n, c, d + xo.d, h + xo.h, w + xo.w)) - double(rm(c));
          return Impl::SumPair(v, v * v);
        });
    {
      const ProfilingRegion region(Impl::kernelLabel("hybrid3d::BatchNorm3d::forward::allreduce"));
      sumsAllreduce_(exec, sums_, comm_.get());
    }
    const auto sums = sums_;
    const double n = count_, momentum = options_.momentum;
    Kokkos::parallel_for(
        Impl::kernelLabel("hybrid3d::BatchNorm3d::forward::finalize"), rangePolicy(exec, 0, C),
        KOKKOS_LAMBDA(const int c) {
          const double shift = rm(c), m1 = sums(c) / n;
          const double mu = shift + m1;
          const double d2 = sums(C + c) / n - m1 * m1;
          const double var = d2 > 0 ? d2 : 0.0;  // rounding may leave a tiny negative
          mean(c) = mu;
          invstd(c) = Impl::rsqrt(var + eps);
          // PyTorch's update, in its order of operations; unbiased variance for the running one.
          rm(c) = P(momentum * mu + (1 - momentum) * double(rm(c)));
          rv(c) = P(momentum * (var * n / (n - 1)) + (1 - momentum) * double(rv(c)));
        });
  } else {
    Kokkos::parallel_for(
        Impl::kernelLabel("hybrid3d::BatchNorm3d::forward::runningStatistics"),
        rangePolicy(exec, 0, C), KOKKOS_LAMBDA(const int c) {
          mean(c) = rm(c);
          invstd(c) = Impl::rsqrt(double(rv(c)) + eps);
        });
  }
  forwardTraining_ = training_;
  haveForward_ = true;
  savedX_ = x;

  const Index3 e = geometry_.inputOwned().extents();
  if (Index(geometry_.inputShape().batch) * C * geometry_.inputOwned().size() == 0) return;
  const auto xv = x.view();
  const auto yv = y.view();
  const Impl::LocalOffset xo = Impl::localOffset(x), yo = Impl::localOffset(y);
  const auto gamma = weight_.value;
  const auto beta = bias_.value;
  // Per row: a, b = gamma, beta. In ComputeOf<T> (float for the 16-bit types), y rounded once.
  using R = ComputeOf<T>;
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename M::memory_space>::accessible)
    return Impl::batchNormNormalizeOnHost(exec, x, y, mean, invstd, gamma, beta);
  Impl::forEachRowCell(
      "hybrid3d::BatchNorm3d::forward::normalize", exec,
      Impl::OwnedRows(geometry_.inputShape().batch, C, e),
      KOKKOS_LAMBDA(Index, const Index c, Index, Index) {
        return Impl::ChannelCoefficients<R>{R(mean(c)), R(invstd(c)), R(gamma(c)), R(beta(c))};
      },
      KOKKOS_LAMBDA(const Index n, const Index c, const Index d, const Index h, const Index w,
                    const Impl::ChannelCoefficients<R>& k) {
        const R xhat = (R(xv(n, c, d + xo.d, h + xo.h, w + xo.w)) - k.mean) * k.invstd;
        yv(n, c, d + yo.d, h + yo.h, w + yo.w) = T(xhat * k.a + k.b);
      });
}

template <class T, class M>
void BatchNorm3d<T, M>::gradientSums(const execution_space& exec, const tensor_type& x,
                                     const tensor_type& dy) {
  Impl::batchNormGradientSums(exec, x, dy, mean_, invstd_, partial_, sums_);
}

template <class T, class M>
void BatchNorm3d<T, M>::addParameterGrads(const execution_space& exec) {
  if (!options_.affine) return;
  Impl::batchNormAddParameterGrads(exec, sums_, weight_.grad, bias_.grad);
}

template <class T, class M>
void BatchNorm3d<T, M>::applyDataGradient(const execution_space& exec, const tensor_type& x,
                                          const tensor_type& dy, const tensor_type& dx) {
  Impl::batchNormApplyDataGradient(exec, x, dy, dx, mean_, invstd_, weight_.value, sums_,
                                   forwardTraining_, count_);
}

template <class T, class M>
void BatchNorm3d<T, M>::backwardWeights(const execution_space& exec, const tensor_type& x,
                                        const tensor_type& dy) {
  geometry_.checkInput(x, "input");
  geometry_.checkOutput(dy, "output gradient");
  if (!haveForward_) fail(geometry_.label(), ": backwardWeights called before forward");
  if (!options_.affine) return;
  gradientSums(exec, x, dy);
  addParameterGrads(exec);
}

template <class T, class M>
void BatchNorm3d<T, M>::backwardData(const execution_space& exec, const tensor_type& dy,
                                     const tensor_type& dx) {
  geometry_.checkOutput(dy, "output gradient");
  geometry_.checkInput(dx, "input gradient");
  if (!haveForward_) fail(geometry_.label(), ": backwardData called before forward");
  if (forwardTraining_) {
    gradientSums(exec, savedX_, dy);
    {
      const ProfilingRegion region(Impl::kernelLabel("hybrid3d::BatchNorm3d::backward::allreduce"));
      sumsAllreduce_(exec, sums_, comm_.get());
    }
  }
  applyDataGradient(exec, savedX_, dy, dx);
}

template <class T, class M>
void BatchNorm3d<T, M>::backward(const execution_space& exec, const tensor_type& x,
                                 const tensor_type& dy, const tensor_type& dx) {
  geometry_.checkInput(x, "input");
  geometry_.checkOutput(dy, "output gradient");
  if (!haveForward_) fail(geometry_.label(), ": backward called before forward");
  const bool wantDx = Impl::wanted(dx);
  if (wantDx) geometry_.checkInput(dx, "input gradient");
  if (!options_.affine && !(wantDx && forwardTraining_)) {
    if (wantDx) applyDataGradient(exec, x, dy, dx);
    return;
  }
  // One sweep for the local sums: the parameter grads take this rank's share, then the data
  // gradient needs them summed over the statistics communicator.
  gradientSums(exec, x, dy);
  addParameterGrads(exec);
  if (!wantDx) return;
  if (forwardTraining_) {
    {
      const ProfilingRegion region(Impl::kernelLabel("hybrid3d::BatchNorm3d::backward::allreduce"));
      sumsAllreduce_(exec, sums_, comm_.get());
    }
  }
  applyDataGradient(exec, x, dy, dx);
}

}  // namespace hybrid3d
