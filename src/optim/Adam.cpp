#include <cmath>

#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/Math.hpp>
#include <hybrid3d/optim/Adam.hpp>

namespace hybrid3d {

template <class T, class M>
Adam<T, M>::Adam(const std::vector<NamedParameter<T, M>>& params, const AdamOptions& options)
    : params_(params), options_(options) {
  if (options.beta1 < 0 || options.beta1 >= 1)
    fail("Adam: beta1 ", options.beta1, " outside [0, 1)");
  if (options.beta2 < 0 || options.beta2 >= 1)
    fail("Adam: beta2 ", options.beta2, " outside [0, 1)");
  if (!(options.eps > 0)) fail("Adam: eps ", options.eps, " must be positive");
  if (options.weightDecay < 0) fail("Adam: negative weight decay ", options.weightDecay);
  for (const auto& p : params_) {
    if (p.param.grad.size() != p.param.value.size())
      fail("Adam: parameter ", p.path(), " has no gradient");
    m_.push_back(state_view(Impl::viewLabel(p.path() + "/exp_avg"), p.param.value.size()));
    v_.push_back(state_view(Impl::viewLabel(p.path() + "/exp_avg_sq"), p.param.value.size()));
  }
}

template <class T, class M>
void Adam<T, M>::step(const execution_space& exec, double lr) {
  const long long t = this->steps_ + 1;
  // Every scalar coefficient is computed in double on the host and rounded to T once, as
  // PyTorch passes them to its kernels (1 - beta2 rounded after the subtraction: in float,
  // 1 - float(0.999) is 1.3e-5 away from 0.001, which moved exp_avg_sq by as much). Bias
  // corrections in double also keep b^t from underflowing in T.
  const double b1 = options_.beta1, b2 = options_.beta2;
  const T keep1 = static_cast<T>(b1), keep2 = static_cast<T>(b2);
  const T take1 = static_cast<T>(1 - b1), take2 = static_cast<T>(1 - b2);
  const T stepSize = static_cast<T>(lr / (1 - std::pow(b1, double(t))));
  const T c2sqrt = static_cast<T>(std::sqrt(1 - std::pow(b2, double(t))));
  const T eps = static_cast<T>(options_.eps), wd = static_cast<T>(options_.weightDecay);
  const T shrink = static_cast<T>(1 - lr * options_.weightDecay);  // AdamW
  const bool decoupled = options_.decoupled;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    auto p = params_[i].param.value;
    auto g = params_[i].param.grad;
    auto m = m_[i];
    auto v = v_[i];
    Kokkos::parallel_for(
        Impl::kernelLabel("hybrid3d::Adam::step"), rangePolicy(exec, 0, Index(p.size())),
        KOKKOS_LAMBDA(const std::size_t j) {
          T d = g(j);
          if (decoupled)
            p(j) *= shrink;
          else
            d += wd * p(j);
          m(j) = keep1 * m(j) + take1 * d;
          v(j) = keep2 * v(j) + take2 * d * d;
          // PyTorch: denom = sqrt(v) / sqrt(1 - b2^t) + eps; p -= (lr / (1 - b1^t)) m / denom
          p(j) -= stepSize * m(j) / (math::sqrt(v(j)) / c2sqrt + eps);
        });
  }
  ++this->steps_;
}

template <class T, class M>
std::vector<std::pair<std::string, typename Adam<T, M>::state_view>> Adam<T, M>::state() const {
  std::vector<std::pair<std::string, state_view>> s;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    s.emplace_back(params_[i].path() + "/exp_avg", m_[i]);
    s.emplace_back(params_[i].path() + "/exp_avg_sq", v_[i]);
  }
  return s;
}

template class Adam<float, DefaultMemorySpace>;
template class Adam<double, DefaultMemorySpace>;

}  // namespace hybrid3d
