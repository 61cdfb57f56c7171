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

#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/core/Error.hpp>

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

// 1/sqrt(v) inside kernels; Kokkos moved sqrt from Kokkos::Experimental to Kokkos in 3.7.
KOKKOS_INLINE_FUNCTION double rsqrt(double v) {
#if KOKKOS_VERSION >= 30700
  return 1.0 / Kokkos::sqrt(v);
#else
  return 1.0 / Kokkos::Experimental::sqrt(v);
#endif
}

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

template <class T, class M>
BatchNorm3d<T, M>::BatchNorm3d(const ProcessGrid& grid, const std::string& name,
                               const TensorShape& input, const Options& options)
    : name_(name), label_("BatchNorm3d '" + name + "'"), options_(options), shape_(input),
      coords_(grid.coords()) {
  if (input.batch < 1 || input.channels < 1)
    fail(label_, ": needs batch and channels >= 1, got batch ", input.batch, " and ",
         input.channels, " channels");
  for (int d = 0; d < 3; ++d)
    if (input.extents[d] < 1)
      fail(label_, ": input extents ", toString(input.extents), " must all be >= 1");
  if (!(options.momentum >= 0 && options.momentum <= 1))
    fail(label_, ": momentum ", options.momentum, " outside [0, 1]");
  if (!(options.eps > 0)) fail(label_, ": eps ", options.eps, " must be > 0");
  dec_ = BlockDecomposition(input.extents, grid.dims());
  owned_ = dec_.ownedBox(coords_);
  const bool global = options.statistics == Statistics::Global;
  count_ = double(input.batch) * (global ? grid.numGroups() : 1) * double(input.extents[0]) *
           double(input.extents[1]) * double(input.extents[2]);
  MPI_Comm_dup(global ? grid.worldComm() : grid.spatialComm(), &comm_);

  const Index C = input.channels;
  weight_ = createParameter<T, M>(label_, "weight", {C}, options.affine);
  bias_ = createParameter<T, M>(label_, "bias", {C}, options.affine);
  runningMean_ = createParameter<T, M>(label_, "running_mean", {C}, false);
  runningVar_ = createParameter<T, M>(label_, "running_var", {C}, false);
  // Without affine, weight and bias stay at 1 and 0 and are not exposed: the kernels need no
  // second path.
  Kokkos::deep_copy(weight_.value, T(1));
  Kokkos::deep_copy(bias_.value, T(0));
  Kokkos::deep_copy(runningMean_.value, T(0));
  Kokkos::deep_copy(runningVar_.value, T(1));

  partial_ = Kokkos::View<double***, M>(label_ + " partial sums", C,
                                        Index(input.batch) * owned_.extent(0), 2);
  sums_ = Kokkos::View<double*, M>(label_ + " sums", 2 * C);
  mean_ = Kokkos::View<double*, M>(label_ + " mean", C);
  invstd_ = Kokkos::View<double*, M>(label_ + " invstd", C);
}

template <class T, class M>
BatchNorm3d<T, M>::~BatchNorm3d() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

template <class T, class M>
std::vector<Parameter<T, M>> BatchNorm3d<T, M>::parameters() const {
  if (!options_.affine) return {};
  return {weight_, bias_};
}

template <class T, class M>
void BatchNorm3d<T, M>::checkTensor(const tensor_type& t, const char* what) const {
  if (t.batch() != shape_.batch || t.channels() != shape_.channels || !(t.decomposition() == dec_) ||
      t.coords() != coords_)
    fail(label_, ": tensor '", what, "' is batch ", t.batch(), " x ", t.channels(),
         " channels x ", toString(t.globalExtents()), " on grid ",
         toString(t.decomposition().dims()), ", expected batch ", shape_.batch, " x ",
         shape_.channels, " channels x ", toString(shape_.extents), " on grid ",
         toString(dec_.dims()), " at this rank's coordinates");
}

template <class T, class M>
template <class CellPair>
void BatchNorm3d<T, M>::channelSums(const execution_space& exec, const std::string& label,
                                    const CellPair& cell) {
  const Index N = shape_.batch, C = shape_.channels;
  const Index D = owned_.extent(0), H = owned_.extent(1), W = owned_.extent(2);
  const auto partial = partial_;
  // One team per (n, c, d) slab of H*W cells, contiguous in memory: enough teams to fill a GPU
  // even for one sample and few channels, and a fixed summation order.
  if (N * C * D > 0) {
    using Policy = Kokkos::TeamPolicy<execution_space>;
    using Member = typename Policy::member_type;
    Kokkos::parallel_for(
        label + "::slabs", Policy(exec, static_cast<int>(N * C * D), Kokkos::AUTO),
        KOKKOS_LAMBDA(const Member& team) {
          const Index slab = team.league_rank();
          const Index d = slab % D, c = (slab / D) % C, n = slab / (D * C);
          Impl::SumPair s;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, H * W),
              [&](const Index i, Impl::SumPair& acc) { acc += cell(n, c, d, i / W, i % W); }, s);
          Kokkos::single(Kokkos::PerTeam(team), [&]() {
            partial(c, n * D + d, 0) = s.a;
            partial(c, n * D + d, 1) = s.b;
          });
        });
  }
  const auto sums = sums_;
  const Index slabs = N * D;
  Kokkos::parallel_for(
      label + "::channels", Kokkos::RangePolicy<execution_space>(exec, 0, C),
      KOKKOS_LAMBDA(const int c) {
        double a = 0, b = 0;
        for (Index j = 0; j < slabs; ++j) {
          a += partial(c, j, 0);
          b += partial(c, j, 1);
        }
        sums(c) = a;
        sums(C + c) = b;
      });
}

template <class T, class M>
void BatchNorm3d<T, M>::forward(const execution_space& exec, const tensor_type& x,
                                const tensor_type& y) {
  checkTensor(x, "x");
  checkTensor(y, "y");
  const int C = shape_.channels;
  const auto mean = mean_;
  const auto invstd = invstd_;
  const auto rm = runningMean_.value;
  const auto rv = runningVar_.value;
  const double eps = options_.eps;
  if (training_) {
    if (count_ <= 1)
      fail(label_, ": training needs more than one value per channel (batch ", shape_.batch,
           ", extents ", toString(shape_.extents), ")");
    const auto xv = x.view();
    const Impl::LocalOffset xo = Impl::localOffset(x);
    channelSums(exec, "hybrid3d::BatchNorm3d::forward::statistics",
                KOKKOS_LAMBDA(Index n, Index c, Index d, Index h, Index w) {
                  const double v = double(xv(n, c, d + xo.d, h + xo.h, w + xo.w)) - double(rm(c));
                  return Impl::SumPair(v, v * v);
                });
    Kokkos::Profiling::pushRegion("hybrid3d::BatchNorm3d::forward::allreduce");
    allreduceSum(sums_, comm_);
    Kokkos::Profiling::popRegion();
    const auto sums = sums_;
    const double n = count_, momentum = options_.momentum;
    Kokkos::parallel_for(
        "hybrid3d::BatchNorm3d::forward::finalize", Kokkos::RangePolicy<execution_space>(exec, 0, C),
        KOKKOS_LAMBDA(const int c) {
          const double shift = rm(c), m1 = sums(c) / n;
          const double mu = shift + m1;
          const double d2 = sums(C + c) / n - m1 * m1;
          const double var = d2 > 0 ? d2 : 0.0;  // rounding may leave a tiny negative
          mean(c) = mu;
          invstd(c) = Impl::rsqrt(var + eps);
          // PyTorch's update, in its order of operations; unbiased variance for the running one.
          rm(c) = T(momentum * mu + (1 - momentum) * double(rm(c)));
          rv(c) = T(momentum * (var * n / (n - 1)) + (1 - momentum) * double(rv(c)));
        });
  } else {
    Kokkos::parallel_for(
        "hybrid3d::BatchNorm3d::forward::runningStatistics",
        Kokkos::RangePolicy<execution_space>(exec, 0, C), KOKKOS_LAMBDA(const int c) {
          mean(c) = rm(c);
          invstd(c) = Impl::rsqrt(double(rv(c)) + eps);
        });
  }
  forwardTraining_ = training_;
  haveForward_ = true;
  savedX_ = x;

  const Index3 e = owned_.extents();
  if (Index(shape_.batch) * C * owned_.size() == 0) return;
  const auto xv = x.view();
  const auto yv = y.view();
  const Impl::LocalOffset xo = Impl::localOffset(x), yo = Impl::localOffset(y);
  const auto gamma = weight_.value;
  const auto beta = bias_.value;
  using Policy = Kokkos::MDRangePolicy<execution_space, Kokkos::Rank<5>, Kokkos::IndexType<Index>>;
  Kokkos::parallel_for(
      "hybrid3d::BatchNorm3d::forward::normalize",
      Policy(exec, {0, 0, 0, 0, 0}, {Index(shape_.batch), Index(C), e[0], e[1], e[2]}),
      KOKKOS_LAMBDA(const Index n, const Index c, const Index d, const Index h, const Index w) {
        const T xhat = (xv(n, c, d + xo.d, h + xo.h, w + xo.w) - T(mean(c))) * T(invstd(c));
        yv(n, c, d + yo.d, h + yo.h, w + yo.w) = xhat * gamma(c) + beta(c);
      });
}

template <class T, class M>
void BatchNorm3d<T, M>::gradientSums(const execution_space& exec, const tensor_type& x,
                                     const tensor_type& dy) {
  const auto xv = x.view();
  const auto dyv = dy.view();
  const Impl::LocalOffset xo = Impl::localOffset(x), yo = Impl::localOffset(dy);
  const auto mean = mean_;
  const auto invstd = invstd_;
  channelSums(exec, "hybrid3d::BatchNorm3d::backward::sums",
              KOKKOS_LAMBDA(Index n, Index c, Index d, Index h, Index w) {
                const double g = dyv(n, c, d + yo.d, h + yo.h, w + yo.w);
                const double xhat =
                    (double(xv(n, c, d + xo.d, h + xo.h, w + xo.w)) - mean(c)) * invstd(c);
                return Impl::SumPair(g, g * xhat);
              });
}

template <class T, class M>
void BatchNorm3d<T, M>::addParameterGrads(const execution_space& exec) {
  if (!options_.affine) return;
  const auto sums = sums_;
  const auto dgamma = weight_.grad;
  const auto dbeta = bias_.grad;
  const int C = shape_.channels;
  Kokkos::parallel_for(
      "hybrid3d::BatchNorm3d::backwardWeights", Kokkos::RangePolicy<execution_space>(exec, 0, C),
      KOKKOS_LAMBDA(const int c) {
        dgamma(c) += T(sums(C + c));
        dbeta(c) += T(sums(c));
      });
}

// Training: dx = gamma*invstd * (dy - sum(dy)/n - xhat * sum(dy*xhat)/n), the sums global over
// the statistics communicator (sums_ must hold them). Inference: dx = gamma*invstd * dy.
template <class T, class M>
void BatchNorm3d<T, M>::applyDataGradient(const execution_space& exec, const tensor_type& x,
                                          const tensor_type& dy, const tensor_type& dx) {
  const Index3 e = owned_.extents();
  const int C = shape_.channels;
  if (Index(shape_.batch) * C * owned_.size() == 0) return;
  const auto xv = x.view();
  const auto dyv = dy.view();
  const auto dxv = dx.view();
  const Impl::LocalOffset xo = Impl::localOffset(x), yo = Impl::localOffset(dy),
                          dxo = Impl::localOffset(dx);
  const auto mean = mean_;
  const auto invstd = invstd_;
  const auto gamma = weight_.value;
  const auto sums = sums_;
  const bool batchStatistics = forwardTraining_;
  const double n = count_;
  using Policy = Kokkos::MDRangePolicy<execution_space, Kokkos::Rank<5>, Kokkos::IndexType<Index>>;
  Kokkos::parallel_for(
      "hybrid3d::BatchNorm3d::backwardData",
      Policy(exec, {0, 0, 0, 0, 0}, {Index(shape_.batch), Index(C), e[0], e[1], e[2]}),
      KOKKOS_LAMBDA(const Index nn, const Index c, const Index d, const Index h, const Index w) {
        const T scale = gamma(c) * T(invstd(c));
        T g = dyv(nn, c, d + yo.d, h + yo.h, w + yo.w);
        if (batchStatistics) {
          const T xhat = (xv(nn, c, d + xo.d, h + xo.h, w + xo.w) - T(mean(c))) * T(invstd(c));
          g -= T(sums(c) / n) + xhat * T(sums(C + c) / n);
        }
        dxv(nn, c, d + dxo.d, h + dxo.h, w + dxo.w) = scale * g;
      });
}

template <class T, class M>
void BatchNorm3d<T, M>::backwardWeights(const execution_space& exec, const tensor_type& x,
                                        const tensor_type& dy) {
  checkTensor(x, "x");
  checkTensor(dy, "dy");
  if (!haveForward_) fail(label_, ": backwardWeights called before forward");
  if (!options_.affine) return;
  gradientSums(exec, x, dy);
  addParameterGrads(exec);
}

template <class T, class M>
void BatchNorm3d<T, M>::backwardData(const execution_space& exec, const tensor_type& dy,
                                     const tensor_type& dx) {
  checkTensor(dy, "dy");
  checkTensor(dx, "dx");
  if (!haveForward_) fail(label_, ": backwardData called before forward");
  if (forwardTraining_) {
    gradientSums(exec, savedX_, dy);
    Kokkos::Profiling::pushRegion("hybrid3d::BatchNorm3d::backward::allreduce");
    allreduceSum(sums_, comm_);
    Kokkos::Profiling::popRegion();
  }
  applyDataGradient(exec, savedX_, dy, dx);
}

template <class T, class M>
void BatchNorm3d<T, M>::backward(const execution_space& exec, const tensor_type& x,
                                 const tensor_type& dy, const tensor_type& dx) {
  checkTensor(x, "x");
  checkTensor(dy, "dy");
  if (!haveForward_) fail(label_, ": backward called before forward");
  const bool wantDx = dx.view().data() != nullptr;
  if (wantDx) checkTensor(dx, "dx");
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
    Kokkos::Profiling::pushRegion("hybrid3d::BatchNorm3d::backward::allreduce");
    allreduceSum(sums_, comm_);
    Kokkos::Profiling::popRegion();
  }
  applyDataGradient(exec, x, dy, dx);
}

}  // namespace hybrid3d
