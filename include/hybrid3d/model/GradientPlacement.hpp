#pragma once
/// \file
/// Where the activation gradients of a training step live: their live ranges over the step and
/// their offsets in one arena (per memory space), so that gradients whose lives do not overlap
/// share memory. Graph::finalize places the buffers it allocates with it, and the model plan
/// (ModelPlan.hpp predictMemory) places the buffers it predicts with it: one rule, so the plan
/// equals what is allocated.
///
/// The step's timeline: node i's forward at time i, its backward at time 2n-1-i (n nodes). The
/// gradient of node p's output along its edge to consumer c is written by c's backward and read
/// by p's backward (the edges into p are summed into the first one there), so it lives from
/// 2n-1-c to 2n-1-p. dL/d(output) is written by the loss after the forward pass and read by the
/// backward of every node without consumers (the last node): it lives from n-1 to the last of
/// those backwards. Lives are closed intervals: a backward's input and output gradients never
/// share memory.

#include <cstddef>
#include <vector>

namespace hybrid3d {

/// The graph's edges as the placement needs them: for node i, the ids of the nodes reading its
/// output, one per input slot, in the graph's edge order (Graph's consumers, ModelPlan's layer
/// order); and the bytes of each edge's gradient, in the same order (with that consumer's ghosts).
struct GradientEdges {
  std::vector<std::vector<int>> consumers;
  std::vector<std::vector<std::size_t>> bytes;
  std::size_t outputGradientBytes = 0;  // dL/d(output), without ghosts
};

/// The placement: each edge gradient's offset in the arena (same shape as GradientEdges::bytes),
/// dL/d(output)'s, the arena's size (at least gradientAlignment, so never empty), and the buffers'
/// sum before placement (what separate allocations would hold).
struct GradientPlacement {
  std::vector<std::vector<std::size_t>> offsets;
  std::size_t outputGradientOffset = 0;
  std::size_t arenaBytes = 0;
  std::size_t separateBytes = 0;
};

/// Every buffer starts at a multiple of this (a cache line, a GPU's coalescing width, and any
/// scalar's alignment).
constexpr std::size_t gradientAlignment = 128;

/// Places the gradients of `edges` by their lives (above): largest first, each at the lowest
/// aligned offset where it overlaps no placed buffer alive at the same time. Deterministic, so
/// every caller with the same edges gets the same offsets.
GradientPlacement placeGradients(const GradientEdges& edges);

/// The activations of an inference pass, where nothing runs backward, placed by their lives as
/// well: the model input (index 0) and node i's output (index i + 1), each with the nodes that
/// read it. On the pass's timeline the input is written at 0 and node i's forward runs at i + 1;
/// an activation lives from its writing to its last reader's forward, and one no node reads (the
/// model output) to the end of the pass, n, where the caller reads it. Lives are closed, so a
/// forward's inputs and output never share memory.
struct ActivationPlacement {
  std::vector<std::size_t> offsets;  // by activation index
  std::size_t arenaBytes = 0;        // at least gradientAlignment, so never empty
  std::size_t separateBytes = 0;     // what separate allocations would hold
};

ActivationPlacement placeInferenceActivations(const std::vector<std::size_t>& bytes,
                                              const std::vector<std::vector<int>>& readers);

/// One buffer's size and closed live range [first, last] on a timeline, for placeByLifetime;
/// and a second closed range [again, againLast] after a dead gap (again > last), or again < 0 for
/// none: a recomputed activation (model/Recompute.hpp) lives from its forward to its forward
/// pass's last reader, and again from its recomputation to its backward.
struct BufferLife {
  std::size_t bytes = 0;
  int first = 0, last = 0;
  int again = -1, againLast = -1;
};

/// Whether two buffers' lives share a moment.
bool livesOverlap(const BufferLife& a, const BufferLife& b);

/// The general rule placeGradients applies: offsets (multiples of `alignment`) such that two
/// buffers whose lives overlap never overlap in memory; returns the offsets and the arena's size
/// in `arenaBytes`.
std::vector<std::size_t> placeByLifetime(const std::vector<BufferLife>& buffers,
                                         std::size_t alignment, std::size_t& arenaBytes);

}  // namespace hybrid3d
