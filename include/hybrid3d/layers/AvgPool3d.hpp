#pragma once
/// \file
/// 3-D average pooling (PyTorch's AvgPool3d without ceil mode or divisor override) on a
/// block-decomposed NCDHW activation: any cubic window, stride and padding <= kernel/2 the halo
/// rules allow. The defaults are CosmoFlow's pool: window 3, stride 2, padding 1, padded zeros
/// counted in the divisor.
///
/// Forward: gather x's halo, then one kernel over the owned outputs: the sum over the window
/// clipped to the domain (padding adds zero) divided by the window's volume (countIncludePad;
/// the window never reaches past the padding without ceil mode) or by the number of cells
/// inside the domain; both divisors are products of per-dimension counts, kept as reciprocals.
/// Backward-data, in gather form (deterministic, no atomics): first dy / divisor once per owned
/// output (the same products forward's divisor uses), then every cell of the ghosted dx sums
/// those over the owned outputs whose window contains it; then the halo's scatterAdd adds ghost
/// cells into their owners, exact for overlapping windows and uneven grids. On host memory the
/// models' windows (3/2, 2/2) take both steps in one pass with the same bits
/// (impl/AvgPool3dBackwardHost.hpp).

#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/layers/LayerConvention.hpp>
#include <hybrid3d/layers/impl/Pool3d_impl.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
class AvgPool3d : public SpatialLayer,
                  public LayerBackward<AvgPool3d<T, MemorySpace>, DistTensor<T, MemorySpace>> {
public:
  HYBRID3D_LAYER_TYPES(T, MemorySpace);

  struct Options {
    int kernel = 3;  // cubic window
    int stride = 2;
    int padding = 1;  // at most kernel / 2, as PyTorch
    bool countIncludePad = true;
  };

  /// Collective over grid.spatialComm() (the halo). Throws hybrid3d::Error naming the layer for
  /// a bad window, a kernel larger than the padded input, or a grid too fine for the halo.
  AvgPool3d(const LayerGrid& grid, const std::string& name, const TensorShape& input,
            const Options& options);

  // name(), shapes, decompositions and inputGhosts(): SpatialLayer (layers/SpatialGeometry.hpp).
  const Options& options() const { return options_; }

  /// y's owned cells := avgpool(x). Gathers x's halo first (x's ghosts are overwritten).
  void forward(const execution_space& exec, const tensor_type& x, const tensor_type& y);
  /// dx's owned cells := dL/dx (dx's ghosts are scratch).
  void backwardData(const execution_space& exec, const tensor_type& dy, const tensor_type& dx);
  void backwardWeights(const execution_space&, const tensor_type&, const tensor_type&) {}
  std::vector<Parameter<ParamOf<T>, MemorySpace>> parameters() const { return {}; }
  /// Inference only (Graph::finalize(true)): frees backward's scaled output gradient.
  void releaseBackward() { scaledDy_ = {}; }
  /// The inputs share memory with other tensors (Graph::finalize(true) places the activations
  /// by their lives): the halo zeroes the padding at every gather, not only a tensor's first.
  void setInputsShareMemory(bool shared) { plan_.halo().setZeroPaddingEveryGather(shared); }
  /// A replay from a kept input (ForwardPass::RecomputeKeptInput) exchanges no halo.
  void setForwardPass(ForwardPass pass) { plan_.setForwardPass(pass); }
  // backward(exec, x, dy, dx): both passes, dx's only where wanted (LayerBackward).

private:
  Options options_;
  Impl::Pool3dPlan<T, MemorySpace> plan_;
  // The arithmetic: T itself, float for the 16-bit types (sums in float, each value rounded once).
  using compute_type = ComputeOf<T>;
  // Per owned output index along D, H, W: 1 / (that dimension's factor of the divisor).
  Kokkos::View<compute_type*, MemorySpace> inverseCount_[3];
  // Backward's dy / divisor on the owned outputs [N, C, owned box] (1/8 of x for stride 2), in
  // compute_type; empty where the one-pass host backward runs (host memory).
  Kokkos::View<compute_type*****, Kokkos::LayoutRight, MemorySpace> scaledDy_;
};

}  // namespace hybrid3d

#include <hybrid3d/layers/impl/AvgPool3d_impl.hpp>

namespace hybrid3d {
#define HYBRID3D_EXTERN(T, D) extern template class AvgPool3d<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_EXTERN)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_EXTERN)
#undef HYBRID3D_EXTERN
}  // namespace hybrid3d
