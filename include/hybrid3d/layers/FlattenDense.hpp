#pragma once
/// \file
/// The first dense layer after the convolutional trunk, without gathering the volume (LBANN
/// style). The input x [N, C, D, H, W] is flattened in GLOBAL (C, D, H, W) order, so the weight
/// W [out, C*D*H*W] and bias [out] are exactly PyTorch's Linear after torch.flatten.
///
/// Column j of W multiplies one voxel of one channel, and that voxel is owned by exactly one rank
/// of the spatial group. So each rank holds only those columns of the weight, W_own [out, C*V]
/// (V = owned voxels; a column shard, Parameter.hpp), packs its own voxels in the same order,
/// x_own [N, C*V], multiplies them with one gemm, and the partial products are summed over the
/// spatial communicator: y [N, out] is then replicated on the group. Backward needs no
/// communication: dx_own = dy W_own, and dW_own += dy^T x_own; the weight gradient is summed
/// over the data-parallel communicator only (no other rank of the group holds those columns),
/// so the weight costs a spatial group the memory and the reduction of ONE copy. The bias is
/// replicated work and its gradient is added on spatial rank 0 only (Parameter.hpp).
/// Mixed precision: for the 16-bit activation types (core/Scalar16.hpp) the weight and bias are
/// float, the packed activations stay 16-bit, the products are summed in float (the partial
/// products and their allreduce too) and y and dx rounded once (impl/DenseKernels.hpp).

#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/OwnedComm.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/grid/LayerGrid.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/engines/HostBlas.hpp>
#include <hybrid3d/layers/LayerConvention.hpp>
#include <hybrid3d/layers/Parameter.hpp>
#include <hybrid3d/layers/SpatialGeometry.hpp>
#include <hybrid3d/layers/impl/DenseKernels.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
class FlattenDense : public SpatialLayer,
                     public LayerBackward<FlattenDense<T, MemorySpace>, DistTensor<T, MemorySpace>,
                                          FeatureView<T, MemorySpace>> {
public:
  HYBRID3D_LAYER_TYPES(T, MemorySpace);

  struct Options {  // {out, bias} as Dense's
    int outFeatures = 0;
    bool bias = true;
    /// When > 0, C*D*H*W must equal it (the model's declared fc1 width): a clear error
    /// instead of a silently different network.
    Index expectedInFeatures = 0;
  };

  /// Collective over grid.worldComm() (dups the spatial communicator). Allocates this rank's
  /// weight columns and the packed workspaces x and dx [N, C*V].
  FlattenDense(const LayerGrid& grid, const std::string& name, const TensorShape& input,
               const Options& options);

  // name(), inputShape(), outputShape() ({N, out, {1, 1, 1}}: a replicated [N, out] view, not
  // a volume), inputDecomposition() and inputGhosts() (none, any accepted): SpatialLayer
  // (layers/SpatialGeometry.hpp).
  Index inFeatures() const { return in_; }
  Index outFeatures() const { return out_; }
  /// weight [out, in] (this rank's columns, in packed order), bias [out]
  std::vector<Parameter<ParamOf<T>, MemorySpace>> parameters() const;
  /// Inference only (Graph::finalize(true)): frees the parameter gradients and backward-data's
  /// packed input gradient.
  void releaseBackward() {
    weight_.grad = {};
    bias_.grad = {};
    dw_ = {};
    dxPacked_ = {};
  }
  const Parameter<ParamOf<T>, MemorySpace>& weight() const { return weight_; }
  /// Which implementation runs the passes (for the start-up report).
  std::string engineDescription() const { return gemmDescription<MemorySpace>(); }
  const Parameter<ParamOf<T>, MemorySpace>& bias() const { return bias_; }

  /// y [N, out] := flatten(x) W^T + b, the same on every rank of the spatial group
  /// (collective over the spatial communicator). x may carry any ghosts.
  void forward(const execution_space& exec, const tensor_type& x, const feature_type& y);
  /// dx owned cells := dy W restricted to this rank's voxels. dy must be the same on every rank
  /// of the group.
  void backwardData(const execution_space& exec, const feature_type& dy, const tensor_type& dx);
  /// weight.grad (own columns) += dy^T x_own; bias.grad += sum_n dy on spatial rank 0.
  void backwardWeights(const execution_space& exec, const tensor_type& x, const feature_type& dy);
  // backward(exec, x, dy, dx): both passes, dx's only where wanted (LayerBackward).

  /// Kernels between a tensor's owned cells and a packed [N, C*V] matrix. Public only because
  /// CUDA forbids device lambdas in private member functions.
  void packInput(const execution_space& exec, const tensor_type& x);
  void unpackInputGradient(const execution_space& exec, const tensor_type& dx);

private:
  // The dense side: y or dy must be [N, out] (it has no geometry).
  void check(const feature_type& v, const char* what) const;

  Index in_ = 0, out_ = 0, localColumns_ = 0;
  bool addsBiasGradient_ = false;  // spatial rank 0
  OwnedComm spatial_;
  using P = ParamOf<T>;  // float for the 16-bit activation types
  Parameter<P, MemorySpace> weight_, bias_;
  using matrix_type = Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace>;
  using param_matrix_type = Kokkos::View<P**, Kokkos::LayoutRight, MemorySpace>;
  matrix_type xPacked_, dxPacked_;
  param_matrix_type w_, dw_;  // the weight's value and gradient as [out, C*V] (views of it)
  // The 16-bit types' partial products [N, out] in float, summed over the spatial group before
  // the bias and the one rounding into y (empty for float and double, whose y is summed).
  param_matrix_type yPartial_;
  StagedAllreduce<P, MemorySpace> yAllreduce_;  // the partial products over the spatial group
};

#define HYBRID3D_EXTERN(T, D) extern template class FlattenDense<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_EXTERN)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_EXTERN)
#undef HYBRID3D_EXTERN

}  // namespace hybrid3d

#include <hybrid3d/layers/impl/FlattenDense_impl.hpp>
