#pragma once
/// \file
/// Optimizers update every parameter of a model from its (already reduced) gradient. They run
/// identically on every rank, so every replica stays equal without further communication.
/// The update formulas are PyTorch's (torch.optim.SGD, torch.optim.Adam), so a run can be
/// compared step by step with a PyTorch reference.

#include <memory>
#include <string>
#include <vector>

#include <hybrid3d/layers/Parameter.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
class Optimizer {
  HYBRID3D_ASSERT_SPACE(MemorySpace);

public:
  using execution_space = typename MemorySpace::execution_space;
  using state_view = Kokkos::View<T*, MemorySpace>;

  virtual ~Optimizer() = default;
  /// One update of every parameter with learning rate `lr` (the schedule's value this step).
  virtual void step(const execution_space& exec, double lr) = 0;
  /// Per-parameter state buffers for checkpoints: (path, buffer) with path
  /// "<layer>/<param>/<state>", e.g. "conv1/weight/momentum_buffer".
  virtual std::vector<std::pair<std::string, state_view>> state() const = 0;
  /// Number of steps taken (Adam's bias correction depends on it); restored from checkpoints.
  long long steps() const { return steps_; }
  void setSteps(long long s) { steps_ = s; }

protected:
  long long steps_ = 0;
};

}  // namespace hybrid3d
