#pragma once
/// \file
/// A model as shapes only: every layer's name, kind, output shape, the grid it runs on, the ghost
/// widths its inputs need and its parameter count, for a process grid of any size, and from that
/// what each rank would hold (GraphMemory) -- without building a layer, allocating a tensor or
/// calling MPI. A dry run (`hybrid3d check`) prints it for the deck's grid; a planner can
/// evaluate any grid. The redistributions the builder inserts between layers on different grids
/// (model/LayerGridRule.hpp) are layers of kind "Redistribute" here, as they are nodes there.
///
/// One source: planModel runs the same architecture definitions as buildModel (the registry's,
/// Architecture.hpp) through a builder that records shapes instead of constructing layers, with the
/// layers' own window arithmetic (layers/Window.hpp) and the halo's reach check
/// (comm/HaloPlan.hpp), so a grid too fine for a layer is refused with the message a real run
/// gives. predictMemory follows Graph::finalize's allocation rules, and places the activation
/// gradients by their lives with the graph's own function (model/GradientPlacement.hpp), and with
/// recomputation the activations by their lives over the step (model/Recompute.hpp); the unit
/// tests ModelPlan.*MemoryEqualsTheFinalizedGraphs hold the two equal on every grid.

#include <string>
#include <vector>

#include <hybrid3d/comm/RedistributePlan.hpp>
#include <hybrid3d/grid/BlockDecomposition.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/grid/LayerLayout.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/engines/ConvEngine.hpp>
#include <hybrid3d/layers/Parameter.hpp>
#include <hybrid3d/model/GraphMemory.hpp>
#include <hybrid3d/model/Models.hpp>

namespace hybrid3d {

/// A convolution's window and engine request (kernel 0: the layer is not a Conv3d).
struct ConvPlan {
  int kernel = 0, stride = 1, padding = 0;
  bool bias = false;
  ConvEngine engine = ConvEngine::Auto;
};

/// One parameter tensor's gradient on a rank: its values there, whether it is a column shard
/// (summed over the ranks holding the same columns; the others over the world), and how many
/// ranks it is summed over.
struct PlannedGradient {
  Index values = 0;
  bool columnShard = false;
  int ranks = 1;
};

struct LayerPlan {
  std::string name;
  std::string kind;                   // the layer class: "Conv3d", "AvgPool3d", "Dense", ...
  std::vector<int> inputs;            // earlier layers' indices, ModelPlan::Input the model input
  TensorShape output;                 // per data-parallel group: its batch, channels, extents
  Int3 grid{1, 1, 1};                 // the sub-grid it runs on (its samples re-spread over them)
  bool volume = true;                 // false: a feature matrix [batch, channels]
  std::vector<GhostMap> inputGhosts;  // what each input must carry on every rank (and its gradient)
  Index parameters = 0;               // trainable values (each with a gradient), global
  std::vector<Index> tensors;         // each parameter tensor's values, global (sum: parameters)
  /// > 0: the layer's weight is a column shard [rows, C*D*H*W of its input] of this many rows
  /// (FlattenDense): a rank holds only the columns of the voxels it owns.
  Index columnShardRows = 0;
  ConvPlan conv;
};

struct ModelPlan {
  static constexpr int Input = -1;

  ModelOptions options;
  ModelTraits traits;
  Int3 grid{1, 1, 1};  // the spatial grid: the input's, and the group's ranks
  TensorShape input;
  std::vector<LayerPlan> layers;

  const TensorShape& shape(int id) const { return id == Input ? input : layers.at(id).output; }
  /// The layout layer `id` (Input: the model input) runs on, and where the rank at `coords` of the
  /// spatial grid sits in it; the samples that rank holds of it.
  LayerLayout layout(int id) const;
  LayerPlace place(int id, const Int3& coords) const;
  int localBatch(int id, const Int3& coords) const;
  /// Some layer runs on another grid than the spatial grid.
  bool staged() const;
  /// A Redistribute layer's plan on the rank at `coords` (forward, or the adjoint's).
  RedistributePlan redistribution(int id, const Int3& coords, bool adjoint = false) const;
  /// The ghost widths the output of layer `id` (Input: the model input) is allocated with: those
  /// its consumers need (Graph::finalize's rule).
  GhostMap outputGhosts(int id) const;
  Index parameterCount() const;
  /// The layers as recomputation sees them (model/Recompute.hpp): a segment starts at each
  /// convolution and dense layer, as Graph's nodes with arithmetic (Node::flops).
  StepGraph stepGraph() const;
  /// options.recompute's segments on these layers (none for `none`; `auto` must be resolved).
  std::vector<RecomputeSegment> recomputeSegments() const;
  /// Trainable values of layer `id` on the rank at `coords` of the spatial grid (a column shard
  /// holds only its part).
  Index localParameters(int id, const Int3& coords) const;
  /// Convolution `id`'s largest operand on the rank at `coords`, as Conv3d measures it for its
  /// engine choice (engines/ConvEngine.hpp largestConvOperand).
  Index convLargestOperand(int id, const Int3& coords) const;
  /// The gradients of layer `id` as the rank at `coords` hands them to the reduction, one per
  /// parameter tensor (GradientReducer sums each on its own).
  std::vector<PlannedGradient> gradients(int id, const Int3& coords, int groups = 1) const;
};

/// The plan of `options` on a grid of `grid` ranks per sample, each layer on the grid
/// options.layerGrids gives it. Throws as buildModel would on such a grid, naming the option or
/// the layer, extent and grid.
ModelPlan planModel(const ModelOptions& options, const Int3& grid);

/// What the rank at `coords` holds once the model is built and finalized with scalar T in
/// MemorySpace: equal to that rank's Graph::memory() in a fresh process. The workspace is the
/// onednn engine's shared host buffer (oneDNN is asked for its sizes, nothing is allocated).
template <class T, class MemorySpace = DefaultMemorySpace>
GraphMemory predictMemory(const ModelPlan& plan, const Int3& coords);

/// predictMemory layer by layer: each layer's output and its gradients (one per consumer, the
/// last layer's dL/d(output) with it; each on its own, before the model's arena places them), its
/// parameters and their gradients, the workspace its convolution asks for (the graph reserves the
/// largest once), a redistribution's buffers. The model input is in neither.
template <class T, class MemorySpace = DefaultMemorySpace>
std::vector<GraphMemory> predictLayerMemory(const ModelPlan& plan, const Int3& coords);

/// predictMemory without the engines' workspaces, and without asking any engine anything: the
/// lower bound a dry run refuses a run by before it plans the engines (so a box too large for
/// the node never reaches a vendor library).
template <class T, class MemorySpace = DefaultMemorySpace>
GraphMemory predictMemoryBeforeEngines(const ModelPlan& plan, const Int3& coords);

/// Bytes one rank hands to the gradient reduction per step with scalar T and `groups`
/// data-parallel groups: what GradientReducer::bytesPerStep() counts on that rank. Replicated
/// parameters are summed over the world, column shards over the ranks holding the same columns
/// (the data-parallel groups, and a layer grid's sub-grids); nothing is reduced over one rank.
template <class T>
std::size_t predictAllreduceBytes(const ModelPlan& plan, const Int3& coords, int groups);

/// The smallest and largest owned box of a volume over the ranks of `grid`, per dimension.
struct BoxRange {
  Index3 smallest{0, 0, 0}, largest{0, 0, 0};
};
BoxRange ownedBoxRange(const Index3& extents, const Int3& grid);

}  // namespace hybrid3d
