#pragma once
/// \file
/// One vertex of a model graph: a layer behind a uniform, host-side interface (virtual calls
/// happen here, on the host, never inside kernels). Adapters in model/Nodes.hpp wrap each
/// layer kind; the graph allocates every activation and gradient once and calls these.

#include <cstdint>
#include <string>
#include <vector>

#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/layers/LayerConvention.hpp>
#include <hybrid3d/layers/LayerFlops.hpp>
#include <hybrid3d/layers/Parameter.hpp>
#include <hybrid3d/model/EdgeTensor.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
class Node {
  HYBRID3D_ASSERT_SPACE(MemorySpace);

public:
  using execution_space = typename MemorySpace::execution_space;
  using value_type = EdgeTensor<T, MemorySpace>;
  using inputs_type = std::vector<const value_type*>;

  virtual ~Node() = default;
  virtual const std::string& name() const = 0;

  /// The output: a volume of this shape, or (isVolume false) features [batch, channels].
  virtual bool producesVolume() const = 0;
  virtual TensorShape outputShape() const = 0;
  /// Ghost widths this node needs on input i (and on the gradient it writes for input i), on
  /// every rank: they may differ from rank to rank (grid/GhostWidths.hpp).
  virtual GhostMap inputGhosts(std::size_t /*input*/) const { return {}; }

  virtual void forward(const execution_space& exec, const inputs_type& in,
                       const value_type& out) = 0;
  /// Adds parameter-gradient contributions (contract in layers/Parameter.hpp) and writes the
  /// owned cells of every non-empty dIn[i] (overwrite). `in` is as forward left it. A backward
  /// reads no output of its own (no layer needs one): under activation recomputation
  /// (model/Recompute.hpp) a node's output may be gone when its backward runs, so there is none
  /// to pass.
  virtual void backward(const execution_space& exec, const inputs_type& in, const value_type& dOut,
                        const inputs_type& dIn) = 0;
  /// How the next forward runs (layers/LayerConvention.hpp): the graph sets a replay around a
  /// recomputed forward and First again after it.
  virtual void setForwardPass(ForwardPass /*pass*/) {}
  /// Gathers the ghosts of the inputs its backward reads (the convolutions' backward-weights)
  /// again. The graph calls it before the backward of a node whose forward was not replayed but
  /// whose input was recomputed: that input's memory held another tensor in between, and its
  /// recomputation wrote the owned cells only.
  virtual void gatherInputGhosts(const execution_space& /*exec*/, const inputs_type& /*in*/) {}
  /// True for the layers `Model/recompute = all` starts a segment at (model/Recompute.hpp):
  /// convolutions and dense layers, the kinds ModelPlan::stepGraph names.
  virtual bool startsSegment() const { return false; }

  /// Which code computes this node when a layer has a choice (the convolution engines), for
  /// the start-up report; empty for the portable Kokkos kernels.
  virtual std::string implementation() const { return {}; }
  /// This rank's arithmetic per pass (layers/LayerFlops.hpp); zero for memory-bound layers.
  virtual LayerFlops flops() const { return {}; }
  /// True for the one node kind that reads its input on another grid than it writes its output
  /// (model/RedistributeNode.hpp); every other node's inputs are on its own grid.
  virtual bool movesBetweenGrids() const { return false; }
  /// Bytes of communication buffers the node holds (a redistribution's), for Graph::memory().
  virtual std::size_t bufferBytes() const { return 0; }

  /// Float master copies for the 16-bit activation types (core/Scalar16.hpp: ParamOf).
  virtual std::vector<Parameter<ParamOf<T>, MemorySpace>> parameters() const { return {}; }
  virtual std::vector<Parameter<ParamOf<T>, MemorySpace>> buffers() const { return {}; }
  /// The input's ghost cells are written by whoever writes the input (a data reader that reads
  /// them from the file): a node that would exchange them need not (layers/Conv3d.hpp).
  virtual void setInputGhostsFilled(bool /*filled*/) {}
  /// The node's inputs share memory with other tensors (Graph::finalize(true) places the
  /// activations by their lives): their ghost cells hold other values whenever the node runs, so
  /// a node that exchanges halos zeroes the padding at every exchange.
  virtual void setInputsShareMemory(bool /*shared*/) {}
  virtual void setTraining(bool /*training*/) {}
  /// Inference only from now on (Graph::finalize(true)): the layer frees its parameter gradients
  /// and the buffers only backward uses; backward must not be called again.
  virtual void releaseBackward() {}
  /// Dropout masks are keyed by step and global sample index (same on every grid).
  virtual void setStep(std::int64_t /*step*/, std::int64_t /*firstGlobalSample*/) {}
};

}  // namespace hybrid3d
