#pragma once
/// \file
/// Which boxes of which samples one rank sends and receives when a tensor moves from one layer
/// layout to another inside a spatial group (grid/LayerLayout.hpp): the intersections of the
/// source and destination block decompositions, sample by sample. Pure index arithmetic on data
/// every rank has (the two layouts, the extents, the group batch), so every rank plans its own
/// part and no size is ever exchanged; the sender's list for a receiver and the receiver's list
/// from that sender come out in the same order (by the group's sample index).
///
/// A volume's owned cells lie on exactly one rank of each layout, so the plan from B to A moves
/// every cell back where the plan from A to B took it: it is the exact adjoint (backward).
/// A replicated tensor (the dense part's [N, F] features: every rank of a sub-grid holds its
/// samples' rows) is planned with `replicated`: each destination rank takes its rows from one
/// rank of the source sub-grid holding them (position q from position q mod P'), and the plan
/// back does the same the other way, which is the adjoint of the logical (unreplicated) map.

#include <vector>

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/grid/LayerLayout.hpp>

namespace hybrid3d {

struct RedistributeBlock {
  int peer = 0;        // the other side's group rank (this rank's own for a local copy)
  int sample = 0;      // the local sample on this side (a copy: on the source side)
  int peerSample = 0;  // the local sample on the other side (a copy: on the destination side)
  Box3 box;            // global voxels ({0,0,0}..{1,1,1} for a feature row)
};

struct RedistributePlan {
  std::vector<RedistributeBlock> sends;   // to other ranks, by peer, then sample
  std::vector<RedistributeBlock> recvs;   // from other ranks, by peer, then sample
  std::vector<RedistributeBlock> copies;  // from this rank to itself
};

/// The plan of group rank `rank` for a tensor of `groupBatch` samples and `extents` (a replicated
/// tensor: {1, 1, 1}) moving from layout `from` to layout `to` of the same group.
RedistributePlan planRedistribute(const LayerLayout& from, const LayerLayout& to,
                                  const Index3& extents, int groupBatch, int rank, bool replicated);

/// Cells of a list of blocks (times the channels: the values moved).
Index cellsOf(const std::vector<RedistributeBlock>& blocks);
/// Distinct peers of a list of blocks.
int peersOf(const std::vector<RedistributeBlock>& blocks);

}  // namespace hybrid3d
