#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/optim/Sgd.hpp>

namespace hybrid3d {

template <class T, class M>
Sgd<T, M>::Sgd(const std::vector<NamedParameter<T, M>>& params, const SgdOptions& options)
    : params_(params), options_(options) {
  if (options.momentum < 0 || options.momentum >= 1)
    fail("SGD: momentum ", options.momentum, " outside [0, 1)");
  if (options.dampening < 0 || options.dampening > 1)
    fail("SGD: dampening ", options.dampening, " outside [0, 1]");
  if (options.weightDecay < 0) fail("SGD: negative weight decay ", options.weightDecay);
  if (options.nesterov && (options.momentum == 0 || options.dampening != 0))
    fail("SGD: Nesterov momentum needs momentum > 0 and no dampening");
  for (const auto& p : params_) {
    if (p.param.grad.size() != p.param.value.size())
      fail("SGD: parameter ", p.path(), " has no gradient");
    if (options.momentum > 0)
      momentum_.push_back(
          state_view(Impl::viewLabel(p.path() + "/momentum_buffer"), p.param.value.size()));
  }
}

template <class T, class M>
void Sgd<T, M>::step(const execution_space& exec, double lr) {
  const T mu = static_cast<T>(options_.momentum), damp = static_cast<T>(1 - options_.dampening);
  const T wd = static_cast<T>(options_.weightDecay), rate = static_cast<T>(lr);
  const bool first = this->steps_ == 0, nesterov = options_.nesterov, momentum = mu > 0;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    auto p = params_[i].param.value;
    auto g = params_[i].param.grad;
    auto b = momentum ? momentum_[i] : state_view();
    Kokkos::parallel_for(
        Impl::kernelLabel("hybrid3d::Sgd::step"), rangePolicy(exec, 0, Index(p.size())),
        KOKKOS_LAMBDA(const std::size_t j) {
          T d = g(j) + wd * p(j);
          if (momentum) {
            const T buf = first ? d : mu * b(j) + damp * d;
            b(j) = buf;
            d = nesterov ? d + mu * buf : buf;
          }
          p(j) -= rate * d;
        });
  }
  ++this->steps_;
}

template <class T, class M>
std::vector<std::pair<std::string, typename Sgd<T, M>::state_view>> Sgd<T, M>::state() const {
  std::vector<std::pair<std::string, state_view>> s;
  for (std::size_t i = 0; i < momentum_.size(); ++i)
    s.emplace_back(params_[i].path() + "/momentum_buffer", momentum_[i]);
  return s;
}

template class Sgd<float, DefaultMemorySpace>;
template class Sgd<double, DefaultMemorySpace>;

}  // namespace hybrid3d
