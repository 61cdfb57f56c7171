#pragma once
/// \file
/// Activation recomputation (PyTorch's torch.utils.checkpoint, for a graph cut over ranks): which
/// activations a training step drops after the forward pass and computes again inside the
/// backward pass, the order the step then runs its nodes in, and where the activations live in
/// one arena by their lives over that order. Graph (model/Graph.hpp) runs and places by it and
/// the memory plan (model/ModelPlan.hpp) predicts by it: one rule, so the plan equals what is
/// allocated.
///
/// A segment is a run of consecutive nodes [first, last] in graph order. The output of a node in
/// it is recomputed when the node is not the segment's last and every node reading it is in the
/// segment; the other outputs (the segment's last, and those read further on, as U-Net's skip
/// connections) are kept. Right before the segment's last node runs backward, the segment's
/// recomputed nodes run forward again, in order, from the kept tensors: a segment holds its
/// interior only while its own backward runs.
///
/// `all` is one segment per weighted node (a convolution or a dense layer), from it to the node
/// before the next weighted node: each convolution's input is kept, its output and what is
/// computed from it up to the next convolution (batch norm, activation, pool, dropout) are
/// recomputed. The step then runs each convolution's forward once more: about a third more
/// arithmetic for a convolution's forward, backward-data and backward-weights.

#include <cstddef>
#include <string>
#include <vector>

#include <hybrid3d/model/GradientPlacement.hpp>

namespace hybrid3d {

/// `Model/recompute`: none (default) | all | auto | layer ranges "FIRST..LAST, NAME, ..." (the
/// layer names `check` prints, as `Parallel/layer grids` names them).
struct RecomputeRange {
  std::string first, last;  // layer names; first == last for one layer
};
struct RecomputeOption {
  enum class Mode { None, All, Auto, Ranges };
  Mode mode = Mode::None;
  std::vector<RecomputeRange> ranges;  // Mode::Ranges
};

/// "none" | "all" | "auto" | "FIRST..LAST, NAME, ..." -> the option; throws naming the entry.
RecomputeOption parseRecompute(const std::string& text);
/// The option as parseRecompute reads it ("conv1..pool1, conv2..pool2" for ranges).
std::string toString(const RecomputeOption& option);

/// Nodes [first, last] (graph indices), recomputed as one.
struct RecomputeSegment {
  int first = 0, last = 0;
  bool operator==(const RecomputeSegment& o) const { return first == o.first && last == o.last; }
};

/// The graph as recomputation sees it: per node its name, the nodes it reads (-1: the model
/// input) and whether it has trainable parameters (a convolution, a dense layer, batch norm is
/// not counted: `all` cuts at the layers whose forward is arithmetic).
struct StepGraph {
  std::vector<std::string> names;
  std::vector<std::vector<int>> inputs;
  std::vector<bool> startsSegment;  // a convolution or dense layer: `all` starts a segment there
};

/// `all`'s segments (above): one from each node that starts a segment to the node before the
/// next one (or the last node); the nodes before the first such node are in none.
std::vector<RecomputeSegment> allSegments(const StepGraph& graph);

/// The option's segments on `graph`: none -> {}, all -> allSegments, ranges -> each by its
/// names, sorted. Throws naming the key for an unknown layer, a range whose first layer comes
/// after its last, and ranges that overlap; `auto` is the planner's to resolve (it throws here).
std::vector<RecomputeSegment> resolveSegments(const RecomputeOption& option,
                                              const StepGraph& graph);

/// Per node: its output is recomputed under `segments` (the rule above).
std::vector<bool> recomputedOutputs(const StepGraph& graph,
                                    const std::vector<RecomputeSegment>& segments);

/// What `hybrid3d check` prints: "none", or the segments by their layers' names and how many
/// outputs they recompute, e.g. "2 segments (conv1..pool1, conv2..pool2), 4 of 12 layer outputs
/// recomputed".
std::string describeRecompute(const StepGraph& graph,
                              const std::vector<RecomputeSegment>& segments);

/// A training step's order of work: every node's forward in graph order, then from the last
/// node to the first: the recomputation of a segment's recomputed nodes (in graph order) right
/// before its last node's backward, and each node's backward.
enum class StepPass { Forward, Recompute, Backward };
struct StepEvent {
  StepPass pass;
  int node;
};
std::vector<StepEvent> stepSchedule(const StepGraph& graph,
                                    const std::vector<RecomputeSegment>& segments);

/// The activations of a training step placed by their lives over `schedule`: the model input
/// (index 0) and node i's output (index i + 1). On the timeline the input is written at 0 and
/// event k runs at k + 1. A node's forward and recomputation read its inputs and write its
/// output; its backward reads its inputs (no layer's backward reads its own output). A kept
/// activation lives from its writing to its last reading, the model output (read by no node) to the
/// end of the step; a recomputed one from its forward to its forward pass's last reader, and again
/// from its recomputation to its last reader after it. Lives are closed, so no node's inputs and
/// output share memory.
ActivationPlacement placeTrainingActivations(const std::vector<std::size_t>& bytes,
                                             const StepGraph& graph,
                                             const std::vector<StepEvent>& schedule);

}  // namespace hybrid3d
