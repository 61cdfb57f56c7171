#pragma once
/// \file
/// 3-D batch normalisation (PyTorch's BatchNorm3d) on a block-decomposed NCDHW activation.
///
/// Training: per-channel statistics over every cell of the mini-batch. By default (global
/// statistics) that is every sample of every data-parallel group and every spatial box, reduced
/// over grid.worldComm(): the result equals single-process PyTorch on the whole mini-batch.
/// Option: statistics per spatial group (grid.spatialComm()), as data-parallel PyTorch without
/// SyncBatchNorm, where each group normalises its own samples. One allreduce of the per-channel
/// sums forward and one of the gradient sums backward; the layer is pointwise otherwise, so it
/// needs no halo and accepts tensors with any ghosts.
/// Running statistics as PyTorch: r = (1 - momentum) r + momentum s, with the unbiased variance
/// n/(n-1) var (normalisation uses the biased one). Inference mode normalises with them.
/// Mixed precision: for the 16-bit activation types (core/Scalar16.hpp) gamma, beta and the
/// running statistics are float, the sums double as for float, every cell is computed in float
/// and rounded once.

#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/OwnedComm.hpp>
#include <hybrid3d/grid/BlockDecomposition.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/grid/LayerGrid.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/layers/LayerConvention.hpp>
#include <hybrid3d/layers/Parameter.hpp>
#include <hybrid3d/layers/SpatialGeometry.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
class BatchNorm3d : public SpatialLayer {
public:
  HYBRID3D_LAYER_TYPES(T, MemorySpace);

  /// Which ranks' cells enter the batch statistics.
  enum class Statistics {
    Global,          // every rank of the mini-batch (grid.worldComm()): equals 1-process PyTorch
    PerSpatialGroup  // the ranks of one sample group (grid.spatialComm())
  };

  struct Options {
    double momentum = 0.1;
    double eps = 1e-5;
    bool affine = true;  // learnable weight (gamma) and bias (beta)
    Statistics statistics = Statistics::Global;
  };

  /// Collective over grid.worldComm() (duplicates the statistics communicator). Throws
  /// hybrid3d::Error naming the layer for bad channels, momentum or eps. Starts in training mode.
  BatchNorm3d(const LayerGrid& grid, const std::string& name, const TensorShape& input,
              const Options& options);
  BatchNorm3d(const BatchNorm3d&) = delete;
  BatchNorm3d& operator=(const BatchNorm3d&) = delete;

  // name(), shapes, decompositions and inputGhosts() (none): SpatialLayer
  // (layers/SpatialGeometry.hpp).
  const Options& options() const { return options_; }

  /// Training mode uses (and updates) batch statistics; inference mode uses the running ones.
  void setTraining(bool training) { training_ = training; }
  bool training() const { return training_; }
  /// A replay (ForwardPass::Recompute or RecomputeKeptInput: activation recomputation) normalises
  /// with the statistics the last forward saved, in the mode it ran in: no reduction over the
  /// ranks, no update of the running statistics, the same bits as that forward wrote.
  void setForwardPass(ForwardPass pass) { replay_ = pass != ForwardPass::First; }

  /// y's owned cells := batchnorm(x). In training mode also updates the running statistics.
  /// x must stay unchanged until backwardData, which reads it again (it has no x argument).
  void forward(const execution_space& exec, const tensor_type& x, const tensor_type& y);
  /// dx's owned cells := dL/dx, with the statistics and the x of the last forward.
  void backwardData(const execution_space& exec, const tensor_type& dy, const tensor_type& dx);
  /// weight.grad += sum(dy * xhat), bias.grad += sum(dy) over this rank's cells.
  void backwardWeights(const execution_space& exec, const tensor_type& x, const tensor_type& dy);
  /// Both, sharing one pass over (x, dy) for the sums that each needs.
  void backward(const execution_space& exec, const tensor_type& x, const tensor_type& dy,
                const tensor_type& dx);

  /// "weight" [C] (starts at 1) and "bias" [C] (starts at 0); none without Options::affine.
  std::vector<Parameter<ParamOf<T>, MemorySpace>> parameters() const;
  /// Inference only (Graph::finalize(true)): frees the parameter gradients.
  void releaseBackward() {
    weight_.grad = {};
    bias_.grad = {};
  }
  /// "running_mean" [C] (starts at 0) and "running_var" [C] (starts at 1), with empty grads,
  /// for checkpoints. Every rank of the statistics communicator holds the same values.
  std::vector<Parameter<ParamOf<T>, MemorySpace>> buffers() const {
    return {runningMean_, runningVar_};
  }

private:
  // The kernels themselves are free functions in Impl (BatchNorm3d_impl.hpp): nvcc forbids
  // device lambdas in private member functions. These pass them the layer's buffers.
  // sums_[c] and sums_[C + c] := this rank's sum(dy) and sum(dy * xhat) over channel c.
  void gradientSums(const execution_space& exec, const tensor_type& x, const tensor_type& dy);
  void addParameterGrads(const execution_space& exec);
  void applyDataGradient(const execution_space& exec, const tensor_type& x, const tensor_type& dy,
                         const tensor_type& dx);

  Options options_;
  OwnedComm comm_;    // statistics communicator (a duplicate)
  double count_ = 0;  // cells per channel over comm_
  bool training_ = true;
  bool forwardTraining_ = true;  // the mode of the last forward, which backward differentiates
  bool haveForward_ = false;
  bool replay_ = false;  // setForwardPass

  // Float for the 16-bit activation types (ParamOf), as the statistics and the arithmetic.
  Parameter<ParamOf<T>, MemorySpace> weight_, bias_, runningMean_, runningVar_;
  Kokkos::View<double***, MemorySpace> partial_;        // [C, N*D_owned, 2]: sums per (n, d) slab
  Kokkos::View<double*, MemorySpace> sums_;             // [2C]: the allreduce buffer
  StagedAllreduce<double, MemorySpace> sumsAllreduce_;  // sums_ over comm_, staged if need be
  Kokkos::View<double*, MemorySpace> mean_, invstd_;    // [C]: statistics of the last forward
  tensor_type savedX_;  // the last forward's x (a shallow handle, no copy)
};

}  // namespace hybrid3d

#include <hybrid3d/layers/impl/BatchNorm3d_impl.hpp>

namespace hybrid3d {
#define HYBRID3D_EXTERN(T, D) extern template class BatchNorm3d<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_EXTERN)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_EXTERN)
#undef HYBRID3D_EXTERN
}  // namespace hybrid3d
