#pragma once
/// \file
/// A model as a directed acyclic graph of layers, built in topological order (each node's
/// inputs are earlier nodes or the model input), with skip connections (a node's output may
/// feed several nodes, as U-Net's encoder blocks feed both the pool and the decoder's concat).
///
/// finalize() allocates every activation and gradient once, each with the ghost widths its
/// consumers need, so the per-step forward() and backward() allocate nothing. In backward,
/// an output that feeds several nodes receives one gradient per consumer; they are summed
/// before the producing node's own backward runs. The activation gradients share one arena,
/// placed by their lives over the step (model/GradientPlacement.hpp): a gradient lives from its
/// consumer's backward to its producer's, and gradients whose lives do not overlap share memory.
/// A gradient's memory thus holds an earlier gradient's values when its life starts: every
/// layer's backward overwrites the whole of each dIn it writes (ghosts included where it has
/// them: the convolutions and pools zero or write them before their scatter-add), and a
/// producer reads only the owned cells of its output gradients. Each node's parameter gradients can
/// be handed to a GradientReducer as soon as that node is done.
///
/// With activation recomputation (setRecompute, model/Recompute.hpp) the activations share one
/// arena too, placed by their lives over the step's order of work (the forward pass, then the
/// backward pass with each segment's recomputed nodes run forward again right before the
/// segment's last node's backward), and backward() runs in that order. A recomputed forward is
/// a replay (layers/LayerConvention.hpp ForwardPass): it writes the bits the first forward wrote.
/// A replay whose inputs were kept since the first forward reuses the ghosts that forward
/// gathered into them (their memory is no other tensor's during their life) and exchanges no
/// halo; one whose input was recomputed too exchanges again (docs/design.md section 16).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <hybrid3d/comm/GradientReducer.hpp>
#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/grid/LayerGrid.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/model/GradientPlacement.hpp>
#include <hybrid3d/model/GraphMemory.hpp>
#include <hybrid3d/model/Node.hpp>
#include <hybrid3d/model/Recompute.hpp>
#include <hybrid3d/layers/Parameter.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
class Graph {
  HYBRID3D_ASSERT_SPACE(MemorySpace);

public:
  using node_type = Node<T, MemorySpace>;
  using value_type = EdgeTensor<T, MemorySpace>;
  using execution_space = typename MemorySpace::execution_space;
  /// Parameters, their gradients and buffers: float master copies for the 16-bit activations.
  using param_type = ParamOf<T>;
  static constexpr int Input = -1;  // the model input, as a node id

  /// The model input lives on `grid` (the spatial grid), with every sample of the group.
  Graph(const LayerGrid& grid, const TensorShape& input);
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Adds a node reading the outputs of `inputs` (earlier ids or Input); returns its id. The node
  /// runs on `grid` (its inputs must be there: model/RedistributeNode.hpp moves them), by
  /// default the model input's.
  int add(std::unique_ptr<node_type> node, const std::vector<int>& inputs);
  int add(std::unique_ptr<node_type> node, const std::vector<int>& inputs, const LayerGrid& grid);
  /// Output shape of node `id` (Input: the model input): this rank's samples on its grid.
  TensorShape shape(int id) const;
  /// The grid node `id` (Input: the model input) runs on.
  const LayerGrid& grid(int id) const;
  std::size_t size() const { return nodes_.size(); }
  node_type& node(std::size_t id) { return *nodes_.at(id).node; }
  /// Node `id`'s output as the last forward() left it, while it is held: where the activations
  /// share memory (inference, recomputation) a later tensor takes over the memory of an output
  /// whose readers have run. The model output is held to the end of the step; replayForward
  /// hands over every output while it is held (what a diagnosis inspects).
  const value_type& outputOf(std::size_t id) const { return nodes_.at(id).output; }
  /// The nodes node `id` reads (Input: the model input).
  const std::vector<int>& inputsOf(std::size_t id) const { return nodes_.at(id).inputs; }

  /// Which activations a training step recomputes (model/Recompute.hpp), before finalize():
  /// none by default. `auto` is the planner's to resolve into ranges first: finalize refuses it.
  void setRecompute(const RecomputeOption& option) { recompute_ = option; }
  /// The nodes as recomputation sees them (a segment starts at each Node::startsSegment), the
  /// rule ModelPlan::stepGraph follows.
  StepGraph stepGraph() const;
  /// After finalize(): the segments a training step recomputes (none for inference), and
  /// whether node `id`'s output is one of those recomputed.
  const std::vector<RecomputeSegment>& recomputeSegments() const { return segments_; }
  bool recomputes(std::size_t id) const { return !recomputed_.empty() && recomputed_.at(id); }

  /// Allocates activations and gradients; the last node added is the model output.
  /// inference: activations only (no activation gradients, no output gradient), and every node
  /// releases its parameter gradients and backward workspaces (Node::releaseBackward); backward()
  /// is then refused.
  void finalize(bool inference = false);

  const TensorShape& inputShape() const { return inputShape_; }
  /// The model input volume; a data reader fills its owned cells (and may fill its ghosts).
  const value_type& input() const { return input_; }
  /// filled = true: whoever writes input() writes its ghost cells too (neighbours' values, zero
  /// padding outside the domain), so the layers reading it exchange no halo for it.
  void setInputGhostsFilled(bool filled);
  const value_type& output() const;
  /// The loss writes dL/d(output) here before backward().
  const value_type& outputGradient() const { return outputGradient_; }

  void forward(const execution_space& exec);
  /// The last forward() again as recomputation replays it (batch norm with that forward's
  /// statistics, no running statistics updated, halos exchanged again), calling visit(id,
  /// output) right after each node's forward, while its output is held. Collective; for a
  /// diagnosis after forward() (train/LossDiagnosis.hpp), not for a step (it allocates).
  void replayForward(const execution_space& exec,
                     const std::function<void(std::size_t, const value_type&)>& visit);
  /// Backpropagates outputGradient(). Parameter gradients are ADDED to (see zeroGradients);
  /// with a reducer, node i's reduction starts as soon as node i is done.
  void backward(const execution_space& exec,
                GradientReducer<param_type, MemorySpace>* reducer = nullptr);
  void zeroGradients(const execution_space& exec);

  /// This rank's floating-point operations in one training step (forward and backward): what
  /// the convolutions must compute, backward-data skipped where a node reads the model input.
  double stepFlops() const;

  /// What this rank's graph holds (after finalize()); the workspace as reserved so far.
  GraphMemory memory() const;

  std::vector<NamedParameter<param_type, MemorySpace>> parameters() const;
  std::vector<NamedParameter<param_type, MemorySpace>> buffers() const;
  /// Gradients of node i's parameters at index i, each with the ranks it is summed over: what
  /// GradientReducer takes.
  std::vector<std::vector<ScopedGradient<param_type, MemorySpace>>> gradientsByNode() const;
  /// Every parameter's gradient, listed once at finalize().
  const std::vector<Kokkos::View<param_type*, MemorySpace>>& gradients() const {
    return gradients_;
  }
  void setTraining(bool training);
  void setStep(std::int64_t step, std::int64_t firstGlobalSample);

private:
  struct Edge {
    int consumer;
    std::size_t slot;
  };
  struct Entry {
    std::unique_ptr<node_type> node;
    LayerGrid grid;
    std::vector<int> inputs;
    std::vector<Edge> consumers;
    value_type output;
    std::vector<value_type> edgeGradients;  // one per consumer, in consumers order
    /// Kokkos profiling region names ("hybrid3d::node::forward NAME", ::recompute, ::backward),
    /// made once so that a step allocates nothing; profiling tools and bench_train_step
    /// --regions time nodes by them.
    std::string forwardRegion, recomputeRegion, backwardRegion;
  };

  value_type allocate(const std::string& label, const TensorShape& shape, bool volume,
                      const GhostMap& ghosts, const LayerGrid& grid) const;
  // Bytes allocate() would take for this tensor; the tensor laid over `at` instead (no
  // allocation).
  std::size_t bytesOf(const TensorShape& shape, bool volume, const GhostMap& ghosts,
                      const LayerGrid& grid) const;
  value_type layOver(char* at, const std::string& label, const TensorShape& shape, bool volume,
                     const GhostMap& ghosts, const LayerGrid& grid) const;
  // finalize(): every edge gradient and dL/d(output) in one arena, placed by their lives.
  void allocateGradients();
  // finalize(): the model input and every node's output, each with the ghosts its consumers
  // need: allocated each on its own (training: backward reads them all), or in one arena placed
  // by their lives over the forward pass (inference) or over the step's order of work
  // (training with recomputation).
  void allocateActivations(bool inference);
  const value_type& gradientFor(int producer, int consumer, std::size_t slot) const;
  // finalize(): recompute_'s segments, the outputs they recompute and the backward pass's order.
  void resolveRecompute();
  // Node `id`'s forward from its inputs, in profiling region `region`.
  void forwardNode(const execution_space& exec, std::size_t id, const std::string& region);
  // Node `id`'s forward again inside the backward pass (a replay, ForwardPass).
  void recomputeNode(const execution_space& exec, std::size_t id);
  // Node `id`'s backward, then its parameter gradients' reduction started.
  void backwardNode(const execution_space& exec, std::size_t id,
                    GradientReducer<param_type, MemorySpace>* reducer);

  LayerGrid grid_;  // the model input's
  TensorShape inputShape_;
  std::vector<Entry> nodes_;
  std::vector<Edge> inputConsumers_;
  value_type input_, outputGradient_;
  // The activation gradients' memory: every edge gradient and outputGradient_ is a view into it.
  Kokkos::View<char*, MemorySpace> gradientArena_;
  // Inference, or training with recomputation: the activations' memory (input_ and every
  // node's output are views into it).
  Kokkos::View<char*, MemorySpace> activationArena_;
  RecomputeOption recompute_;
  std::vector<RecomputeSegment> segments_;  // resolved by finalize (training)
  std::vector<bool> recomputed_;            // per node, empty without segments
  // Per node: its forward is not replayed but an input is recomputed, so its backward gathers
  // that input's ghosts again first (Node::gatherInputGhosts); empty without segments.
  std::vector<bool> regathers_;
  std::vector<StepEvent> backwardPass_;  // the step's order after the forward pass
  std::vector<Kokkos::View<param_type*, MemorySpace>>
      gradients_;       // every parameter's, for zeroGradients
  GraphMemory memory_;  // activations, their gradients and the parameters, set by finalize()
  // The argument lists forward() and backward() hand each node, sized once by finalize(): a
  // step allocates nothing.
  std::vector<const value_type*> in_, dIn_;
  bool finalized_ = false;
  bool inference_ = false;
};

#define HYBRID3D_EXTERN(T, D) extern template class Graph<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_EXTERN)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_EXTERN)
#undef HYBRID3D_EXTERN

}  // namespace hybrid3d
