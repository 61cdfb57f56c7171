#pragma once
/// \file
/// 3-D max pooling (PyTorch's MaxPool3d without dilation or ceil mode) on a block-decomposed
/// NCDHW activation: any cubic window, stride and padding <= kernel/2 the halo rules allow.
///
/// Forward: gather x's halo (the receptive-field overhang of the owned outputs), then one kernel
/// over the owned outputs. Padding acts as -infinity (windows are clipped to the domain), ties go
/// to the first maximum in (d, h, w) window order and a NaN wins, exactly as PyTorch's CPU kernel;
/// the winner's position in the window is kept for backward.
/// Backward-data, in gather form (deterministic, no atomics): every cell of the ghosted dx sums
/// dy of the owned outputs whose window it won; then the halo's scatterAdd (the adjoint of the
/// forward gather) adds ghost cells into their owners. This is exact whatever the overlap
/// (kernel > stride) or the misalignment of input and output boxes on uneven grids. Windows
/// that do not overlap (kernel <= stride, as 2/2) take a cheaper race-free path: each owned
/// output writes its dy to its winner in the zeroed ghosted dx, then the same scatterAdd.

#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/layers/LayerConvention.hpp>
#include <hybrid3d/layers/impl/Pool3d_impl.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
class MaxPool3d : public SpatialLayer,
                  public LayerBackward<MaxPool3d<T, MemorySpace>, DistTensor<T, MemorySpace>> {
public:
  HYBRID3D_LAYER_TYPES(T, MemorySpace);

  struct Options {
    int kernel = 2;  // cubic window
    int stride = 2;
    int padding = 0;  // at most kernel / 2, as PyTorch
  };

  /// Collective over grid.spatialComm() (the halo). Throws hybrid3d::Error naming the layer for
  /// a bad window, a kernel larger than the padded input, or a grid too fine for the halo.
  MaxPool3d(const LayerGrid& grid, const std::string& name, const TensorShape& input,
            const Options& options);

  // name(), shapes, decompositions and inputGhosts(): SpatialLayer (layers/SpatialGeometry.hpp).
  const Options& options() const { return options_; }

  /// y's owned cells := maxpool(x). Gathers x's halo first (x's ghosts are overwritten).
  void forward(const execution_space& exec, const tensor_type& x, const tensor_type& y);
  /// dx's owned cells := dL/dx for the x of the last forward (dx's ghosts are scratch).
  void backwardData(const execution_space& exec, const tensor_type& dy, const tensor_type& dx);
  void backwardWeights(const execution_space&, const tensor_type&, const tensor_type&) {}
  std::vector<Parameter<ParamOf<T>, MemorySpace>> parameters() const { return {}; }
  /// Inference only (Graph::finalize(true)): frees the winners' positions, which only backward
  /// reads; forward then keeps none.
  void releaseBackward() {
    argmax_ = {};
    released_ = true;
  }
  /// The inputs share memory with other tensors (Graph::finalize(true) places the activations
  /// by their lives): the halo zeroes the padding at every gather, not only a tensor's first.
  void setInputsShareMemory(bool shared) { plan_.halo().setZeroPaddingEveryGather(shared); }
  /// A replay from a kept input (ForwardPass::RecomputeKeptInput) exchanges no halo.
  void setForwardPass(ForwardPass pass) { plan_.setForwardPass(pass); }
  // backward(exec, x, dy, dx): both passes, dx's only where wanted (LayerBackward).

private:
  Options options_;
  Impl::Pool3dPlan<T, MemorySpace> plan_;
  // Per owned output, the position of its maximum inside its window: the offsets along D, H
  // and W packed 8 bits each (Impl::PoolGeometry::packOffset).
  Kokkos::View<int*****, Kokkos::LayoutRight, MemorySpace> argmax_;
  bool haveArgmax_ = false;
  bool released_ = false;  // releaseBackward: argmax_ is empty and forward writes none
};

}  // namespace hybrid3d

#include <hybrid3d/layers/impl/MaxPool3d_impl.hpp>

namespace hybrid3d {
#define HYBRID3D_EXTERN(T, D) extern template class MaxPool3d<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_EXTERN)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_EXTERN)
#undef HYBRID3D_EXTERN
}  // namespace hybrid3d
