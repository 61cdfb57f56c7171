#pragma once
/// \file
/// Adam as torch.optim.Adam (L2 weight decay added to the gradient) or, with `decoupled`, as
/// torch.optim.AdamW (p *= 1 - lr * wd before the update):
///   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
///   p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)

#include <hybrid3d/optim/Optimizer.hpp>

namespace hybrid3d {

struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.0;
  bool decoupled = false;  // AdamW
};

template <class T, class MemorySpace = DefaultMemorySpace>
class Adam : public Optimizer<T, MemorySpace> {
  HYBRID3D_ASSERT_SPACE(MemorySpace);

public:
  using typename Optimizer<T, MemorySpace>::execution_space;
  using typename Optimizer<T, MemorySpace>::state_view;

  Adam(const std::vector<NamedParameter<T, MemorySpace>>& params, const AdamOptions& options);
  void step(const execution_space& exec, double lr) override;
  std::vector<std::pair<std::string, state_view>> state() const override;

private:
  std::vector<NamedParameter<T, MemorySpace>> params_;
  std::vector<state_view> m_, v_;
  AdamOptions options_;
};

extern template class Adam<float, DefaultMemorySpace>;
extern template class Adam<double, DefaultMemorySpace>;

}  // namespace hybrid3d
