#pragma once
/// \file
/// Stochastic gradient descent with momentum, dampening, Nesterov and L2 weight decay, as
/// torch.optim.SGD:  g = grad + wd * p;  b = mu * b + (1 - dampening) * g (b = g on the first
///   step);  g = nesterov ? g + mu * b : b;  p -= lr * g.

#include <hybrid3d/optim/Optimizer.hpp>

namespace hybrid3d {

struct SgdOptions {
  double momentum = 0.0;
  double dampening = 0.0;
  double weightDecay = 0.0;
  bool nesterov = false;
};

template <class T, class MemorySpace = DefaultMemorySpace>
class Sgd : public Optimizer<T, MemorySpace> {
  HYBRID3D_ASSERT_SPACE(MemorySpace);

public:
  using typename Optimizer<T, MemorySpace>::execution_space;
  using typename Optimizer<T, MemorySpace>::state_view;

  /// Throws when an option is out of range (negative momentum, Nesterov without momentum...).
  Sgd(const std::vector<NamedParameter<T, MemorySpace>>& params, const SgdOptions& options);
  void step(const execution_space& exec, double lr) override;
  std::vector<std::pair<std::string, state_view>> state() const override;

private:
  std::vector<NamedParameter<T, MemorySpace>> params_;
  std::vector<state_view> momentum_;  // allocated once, empty without momentum
  SgdOptions options_;
};

extern template class Sgd<float, DefaultMemorySpace>;
extern template class Sgd<double, DefaultMemorySpace>;

}  // namespace hybrid3d
