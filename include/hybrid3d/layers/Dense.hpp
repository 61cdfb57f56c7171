#pragma once
/// \file
/// A dense (fully connected) layer on replicated activations: y = x W^T + b with x [N, in],
/// W [out, in] (PyTorch), b [out]. Every rank of a spatial group holds the same x and computes
/// the same y and dx (cheaper than communicating them). Because that work is replicated, the
/// parameter gradients are added on spatial rank 0 only (gradient contract, Parameter.hpp), so
/// the sum over the world counts them once per group.
/// Mixed precision: for the 16-bit activation types (core/Scalar16.hpp) the weights and their
/// gradients are float, the products are summed in float and y and dx rounded once
/// (impl/DenseKernels.hpp's mixed kernels instead of the gemm).

#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/grid/LayerGrid.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/engines/HostBlas.hpp>
#include <hybrid3d/layers/LayerConvention.hpp>
#include <hybrid3d/layers/Parameter.hpp>
#include <hybrid3d/layers/impl/DenseKernels.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
class Dense : public LayerBackward<Dense<T, MemorySpace>, FeatureView<T, MemorySpace>> {
public:
  HYBRID3D_LAYER_TYPES(T, MemorySpace);

  struct Options {
    int outFeatures = 0;
    bool bias = true;
  };

  /// in = input.channels * D * H * W (pass {N, F, {1, 1, 1}} for a plain [N, F] input).
  Dense(const LayerGrid& grid, const std::string& name, const TensorShape& input,
        const Options& options);

  const std::string& name() const { return name_; }
  const TensorShape& inputShape() const { return input_; }
  const TensorShape& outputShape() const { return output_; }  // {N, out, {1, 1, 1}}
  Index inFeatures() const { return in_; }
  Index outFeatures() const { return out_; }
  GhostMap inputGhosts() const { return {}; }
  /// weight [out, in], bias [out]: float for the 16-bit activation types (ParamOf)
  std::vector<Parameter<ParamOf<T>, MemorySpace>> parameters() const;
  /// Inference only (Graph::finalize(true)): frees the parameter gradients.
  void releaseBackward() {
    weight_.grad = {};
    bias_.grad = {};
  }
  const Parameter<ParamOf<T>, MemorySpace>& weight() const { return weight_; }
  /// Which implementation runs the passes (for the start-up report).
  std::string engineDescription() const { return gemmDescription<MemorySpace>(); }
  const Parameter<ParamOf<T>, MemorySpace>& bias() const { return bias_; }  // empty without bias

  /// y [N, out] := x W^T + b.
  void forward(const execution_space& exec, const feature_type& x, const feature_type& y) const;
  /// dx [N, in] := dy W (every rank).
  void backwardData(const execution_space& exec, const feature_type& dy,
                    const feature_type& dx) const;
  /// weight.grad += dy^T x, bias.grad += sum_n dy (spatial rank 0 only).
  void backwardWeights(const execution_space& exec, const feature_type& x,
                       const feature_type& dy) const;
  // backward(exec, x, dy, dx): both passes, dx's only where wanted (LayerBackward).

private:
  void check(const feature_type& v, Index cols, const char* what) const;

  std::string name_;
  TensorShape input_, output_;
  Index in_ = 0, out_ = 0;
  bool addsGradients_ = false;  // spatial rank 0
  Parameter<ParamOf<T>, MemorySpace> weight_, bias_;
};

#define HYBRID3D_EXTERN(T, D) extern template class Dense<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_EXTERN)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_EXTERN)
#undef HYBRID3D_EXTERN

}  // namespace hybrid3d

#include <hybrid3d/layers/impl/Dense_impl.hpp>
