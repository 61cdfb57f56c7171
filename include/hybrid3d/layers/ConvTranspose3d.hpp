#pragma once
/// \file
/// 3-D transposed convolution with kernel == stride and no padding (the U-Net up-sampling: PyTorch
/// ConvTranspose3d(k=2, s=2)), optional bias, weight [Cin, Cout, k, k, k], output extent n*k.
///
/// Each input voxel writes a disjoint k^3 block of outputs, so the layer is one gemm per chunk:
/// Blocks[Cout*k^3, voxels] = W^T[Cout*k^3, Cin] * X[Cin, voxels]. Input and output are each
/// block-decomposed on the same grid, so a rank's owned output box need not be the image of its
/// owned input box: the input ghosts come from requiredGhosts with transposedInputRange, forward
/// gathers them and computes the blocks of the input range R its owned outputs read.
///
/// Backward is the adjoint of exactly that: every rank computes dX for all voxels of R from the
/// output gradient it OWNS (block entries of other ranks' outputs count as zero), writes them
/// into the ghosted dx, and the halo's scatterAdd sums the ghost parts into their owners. Each
/// (input, output) pair is thus counted once, by the owner of the output voxel, on any grid.
///
/// Mixed precision (T = bfloat16 or float16): float master weights (ParamOf<T>), float
/// workspaces; the packing copies convert to float, the gemm runs in float, and each output
/// (forward: + bias) and each input-gradient cell (one gemm column, not a sum over chunks) is
/// rounded to T once; the halo's scatterAdd then sums ghost contributions in float. dW and db
/// accumulate in float.

#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <Kokkos_Core.hpp>

#include <hybrid3d/comm/Halo.hpp>
#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/Precision.hpp>
#include <hybrid3d/grid/BlockDecomposition.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/grid/LayerGrid.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/engines/HostBlas.hpp>
#include <hybrid3d/layers/LayerConvention.hpp>
#include <hybrid3d/layers/LayerFlops.hpp>
#include <hybrid3d/layers/Parameter.hpp>
#include <hybrid3d/layers/SpatialGeometry.hpp>
#include <hybrid3d/layers/Window.hpp>
#include <hybrid3d/layers/impl/ConvTranspose3dBlocks.hpp>
#include <hybrid3d/kernels/Im2col.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
class ConvTranspose3d
    : public SpatialLayer,
      public LayerBackward<ConvTranspose3d<T, MemorySpace>, DistTensor<T, MemorySpace>> {
public:
  HYBRID3D_LAYER_TYPES(T, MemorySpace);

  struct Options {
    int outChannels = 0;
    int kernel = 2;  // cubic; must equal stride
    int stride = 2;
    int padding = 0;  // must be 0
    bool bias = false;
    /// Bound on the gemm workspace (input columns and output blocks of one chunk; host memory
    /// spaces use at most Impl::hostChunkBytes of it); a chunk is at least one row of inputs.
    std::size_t workspaceBytes = std::size_t(64) << 20;
  };

  /// Collective over grid.worldComm(). Throws hybrid3d::Error naming the layer for kernel !=
  /// stride, padding != 0, bad channels, or a grid too fine for the input halo.
  ConvTranspose3d(const LayerGrid& grid, const std::string& name, const TensorShape& input,
                  const Options& options);

  // name(), shapes, decompositions and inputGhosts(): SpatialLayer (layers/SpatialGeometry.hpp).
  const Options& options() const { return options_; }

  void forward(const execution_space& exec, const tensor_type& x, const tensor_type& y);
  void backwardData(const execution_space& exec, const tensor_type& dy, const tensor_type& dx);
  /// x is the tensor forward ran on, with the ghosts forward gathered still in place.
  void backwardWeights(const execution_space& exec, const tensor_type& x, const tensor_type& dy);
  // backward(exec, x, dy, dx): both passes, dx's only where wanted (LayerBackward).

  /// "weight" [Cin, Cout, k, k, k] and, with Options::bias, "bias" [Cout]; values start at zero.
  /// For 16-bit T they are float (ParamOf<T>), as are their gradients.
  std::vector<Parameter<ParamOf<T>, MemorySpace>> parameters() const;
  /// Inference only (Graph::finalize(true)): frees the parameter gradients.
  void releaseBackward() {
    weight_.grad = {};
    bias_.grad = {};
  }
  /// The inputs share memory with other tensors (Graph::finalize(true) places the activations
  /// by their lives): the halo zeroes the padding at every gather, not only a tensor's first.
  void setInputsShareMemory(bool shared) {
    if (halo_) halo_->setZeroPaddingEveryGather(shared);
  }
  /// A replay from a kept input (ForwardPass::RecomputeKeptInput) exchanges no halo.
  void setForwardPass(ForwardPass pass) { forwardPass_ = pass; }
  /// x's halo gathered again (backwardWeights reads x's ghosts; see Conv3d::gatherInputGhosts).
  void gatherInputGhosts(const execution_space& exec, const tensor_type& x) {
    if (halo_) halo_->gather(exec, x);
  }
  /// This rank's arithmetic per pass: with kernel = stride every output value is Cin
  /// multiply-adds (one input voxel per output voxel).
  LayerFlops flops() const {
    const auto& g = geometry_;
    const double outputs =
        double(g.outputShape().batch) * g.outputShape().channels * g.outputOwned().size();
    return convolutionFlops(outputs * g.inputShape().channels, options_.bias ? outputs : 0.0);
  }

  Index rowsPerChunk() const { return rowsPerChunk_; }
  /// Which implementation runs the passes (for the start-up report).
  std::string engineDescription() const {
    return isScalar16<T> ? gemmDescription<MemorySpace>() + " in float on " +
                               toString(precisionOf<T>()) + " storage"
                         : gemmDescription<MemorySpace>();
  }

private:
  // Parameters, workspaces and gemm operands: T for float and double, float for 16-bit T.
  using Compute = ComputeOf<T>;
  static_assert(std::is_same_v<Compute, ParamOf<T>>);
  using Matrix = Impl::Matrix<Compute, MemorySpace>;
  using Vector = Impl::Vector<Compute, MemorySpace>;

  Matrix weightMatrix(bool grad) const;

  Options options_;
  Impl::BlockGeometry blocks_;
  Impl::ConvGeometry range_;     // R as rows of input voxels, for the X <-> column copies
  Index3 rangeOffset_{0, 0, 0};  // local (ghosted) index of R's first voxel
  Index rows_ = 0, rowsPerChunk_ = 1;

  Parameter<ParamOf<T>, MemorySpace> weight_, bias_;
  // Workspaces in ComputeOf<T>: the copies between them and the tensors convert.
  Kokkos::View<Compute*, MemorySpace> in_;             // [Cin, chunk columns]: X or dX of a chunk
  Kokkos::View<Compute*, MemorySpace> blockBuf_;       // [Cout*k^3, chunk columns]: Y or dY blocks
  Kokkos::View<Compute*, MemorySpace> ones_, perTap_;  // bias gradient = fold(dY blocks * ones)
  std::unique_ptr<Halo<T, MemorySpace>> halo_;
  ForwardPass forwardPass_ = ForwardPass::First;
};

}  // namespace hybrid3d

#include <hybrid3d/layers/impl/ConvTranspose3d_impl.hpp>

namespace hybrid3d {
#define HYBRID3D_EXTERN(T, D) extern template class ConvTranspose3d<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_EXTERN)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_EXTERN)
#undef HYBRID3D_EXTERN
}  // namespace hybrid3d
