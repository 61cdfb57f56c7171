#pragma once
/// \file
/// Mean squared error on replicated predictions [N, F] (the output of the dense part): the mean
/// over the GLOBAL mini-batch and the features, PyTorch's default reduction. Each of the G
/// data-parallel groups holds N different samples, so the loss is
///   L = sum over all N*G samples and F features of (p - t)^2 / (N * G * F),
/// summed over grid.dataComm(); its gradient 2 (p - t) / (N * G * F) needs no communication.
/// Every rank of a spatial group computes the same values (replicated work). On a layer grid
/// (grid/LayerGrid.hpp) each sub-grid holds its own samples (`batch` of them, maybe none) and
/// dataComm() holds one rank of each: N * G is counted over it, so any layout gives the same L.
///
/// NaN: forward returns the global loss, the same on every rank of the world; a NaN or Inf
/// anywhere in the mini-batch makes it NaN/Inf on every rank (the sum propagates it), so
/// `std::isfinite(loss)` is a test every rank answers alike (no hang when acting on it).

#include <string>

#include <Kokkos_Core.hpp>

#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/OwnedComm.hpp>
#include <hybrid3d/core/ProfilingRegion.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/grid/LayerGrid.hpp>
#include <hybrid3d/layers/LayerConvention.hpp>
#include <hybrid3d/layers/impl/DenseKernels.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
class MseLoss {
public:
  HYBRID3D_LAYER_TYPES(T, MemorySpace);

  /// `batch` is this rank's samples (the per-group mini-batch N on the spatial grid).
  /// Collective over grid.worldComm().
  MseLoss(const LayerGrid& grid, const std::string& name, int batch, int features);

  const std::string& name() const { return name_; }

  /// The global loss (collective over the data-parallel communicator).
  double forward(const execution_space& exec, const feature_type& prediction,
                 const feature_type& target) const;
  /// dprediction := gradientScale * dL/dprediction (may be the prediction view itself); the
  /// scale is half's loss scaling (train/LossScale.hpp).
  void backward(const execution_space& exec, const feature_type& prediction,
                const feature_type& target, const feature_type& dprediction,
                double gradientScale = 1.0) const;

private:
  void check(const feature_type& v, const char* what) const;

  std::string name_;
  Index batch_ = 0, features_ = 0;
  double count_ = 1;  // N * G * F: every sample of the mini-batch once
  OwnedComm data_;
};

template <class T, class M>
MseLoss<T, M>::MseLoss(const LayerGrid& grid, const std::string& name, int batch, int features)
    : name_(name), batch_(batch), features_(features), data_(grid.dataComm()) {
  if (batch < 0 || features <= 0)
    fail(name, ": MseLoss needs a batch >= 0 and positive features (got ", batch, "x", features,
         ")");
  count_ = sumOverRanks(double(batch), data_.get()) * features;
  if (count_ <= 0) fail(name, ": MseLoss over a mini-batch without samples");
}

template <class T, class M>
void MseLoss<T, M>::check(const feature_type& v, const char* what) const {
  if (Index(v.extent(0)) != batch_ || Index(v.extent(1)) != features_)
    fail(name_, ": MseLoss ", what, " is ", v.extent(0), "x", v.extent(1), ", expected ", batch_,
         "x", features_);
}

template <class T, class M>
double MseLoss<T, M>::forward(const execution_space& exec, const feature_type& prediction,
                              const feature_type& target) const {
  check(prediction, "prediction");
  check(target, "target");
  const auto p = prediction, t = target;
  const Index F = features_;
  double sum = 0;
  Kokkos::parallel_reduce(
      Impl::kernelLabel("hybrid3d::MseLoss::forward"), rangePolicy(exec, 0, batch_ * F),
      KOKKOS_LAMBDA(const Index i, double& s) {
        const double d = double(p(i / F, i % F)) - double(t(i / F, i % F));
        s += d * d;
      },
      sum);
  {
    const ProfilingRegion region(Impl::kernelLabel("hybrid3d::MseLoss::allreduce"));
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, data_.get());
  }
  return sum / count_;
}

template <class T, class M>
void MseLoss<T, M>::backward(const execution_space& exec, const feature_type& prediction,
                             const feature_type& target, const feature_type& dprediction,
                             double gradientScale) const {
  check(prediction, "prediction");
  check(target, "target");
  check(dprediction, "prediction gradient");
  const auto p = prediction, t = target, g = dprediction;
  const Index F = features_;
  using C = ComputeOf<T>;  // float for the 16-bit types: one rounding of the gradient
  const C scale = C(2.0 * gradientScale / count_);
  Kokkos::parallel_for(
      Impl::kernelLabel("hybrid3d::MseLoss::backward"), rangePolicy(exec, 0, batch_ * F),
      KOKKOS_LAMBDA(const Index i) {
        const Index n = i / F, f = i % F;
        g(n, f) = T(scale * (C(p(n, f)) - C(t(n, f))));
      });
}

#define HYBRID3D_EXTERN(T, D) extern template class MseLoss<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_EXTERN)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_EXTERN)
#undef HYBRID3D_EXTERN

}  // namespace hybrid3d
