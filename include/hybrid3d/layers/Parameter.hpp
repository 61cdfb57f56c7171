#pragma once
// Trainable parameters and their gradients, as layers expose them to optimizers, gradient
// reduction and checkpoints (`/model/<layer>/<name>`, PyTorch shapes).
//
// Gradient contract of every layer's backward: it ADDS this rank's contribution to `grad`, and
// the gradient of the global loss is the sum of `grad` over every rank of the world (spatial x
// data). A layer whose computation is replicated on the ranks of a spatial group (dense layers
// after the partial products are summed, their biases) adds its gradient on spatial rank 0
// only, so the sum counts it once per group.

#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d {

// Shape of a distributed activation: per-group batch, channels and global spatial extents.
struct TensorShape {
  int batch = 0;
  int channels = 0;
  Index3 extents{0, 0, 0};
  friend bool operator==(const TensorShape& a, const TensorShape& b) {
    return a.batch == b.batch && a.channels == b.channels && a.extents == b.extents;
  }
};

template <class T, class MemorySpace = DefaultMemorySpace>
struct Parameter {
  HYBRID3D_ASSERT_SPACE(MemorySpace);
  std::string name;                   // "weight", "bias", "running_mean", ...
  std::vector<Index> shape;           // PyTorch shape, row-major
  Kokkos::View<T*, MemorySpace> value;
  Kokkos::View<T*, MemorySpace> grad;  // empty for buffers (batch-norm running statistics)
};

// Allocates a parameter (zeroed value and gradient) of the given PyTorch shape.
template <class T, class MemorySpace = DefaultMemorySpace>
Parameter<T, MemorySpace> createParameter(const std::string& layer, const std::string& name,
                                          const std::vector<Index>& shape, bool trainable = true) {
  Index n = 1;
  for (Index e : shape) n *= e;
  Parameter<T, MemorySpace> p{name, shape, Kokkos::View<T*, MemorySpace>(layer + "/" + name, n),
                              {}};
  if (trainable) p.grad = Kokkos::View<T*, MemorySpace>(layer + "/" + name + "/grad", n);
  return p;
}

}  // namespace hybrid3d
