#pragma once
/// \file
/// What a dry run checks of the machine before a job spends its allocation: that every rank can
/// create and write the output directory (a file in its place, a read-only parent, a path one
/// node does not see), and that the plan's memory fits each node (ranks per node counted: a
/// node's ranks share its memory). Both collective over the world, each error agreed.

#include <string>

#include <mpi.h>

namespace hybrid3d {

/// Every rank checks that `dir` is, or can be created as, a directory it can write, creating
/// and removing a probe file (in `dir` if it exists, else in its nearest existing parent); the
/// first failing rank's line is thrown on every rank.
void checkOutputWritable(MPI_Comm world, const std::string& dir);

/// The node's memory in bytes: the physical memory, or the cgroup's limit when lower.
double nodeMemoryBytes();

/// `bytesPerRank` (the plan's largest rank) times the ranks on each node (MPI_COMM_TYPE_SHARED)
/// against the node's memory; with limitPerRank > 0, `bytesPerRank` against it instead. Throws
/// on every rank, naming the node, the ranks and both sizes, with how to override.
/// `beforeWorkspaces`: `bytesPerRank` is the lower bound without the engines' workspaces
/// (model/ModelPlan.hpp predictMemoryBeforeEngines), and the message says so.
void checkNodeMemory(MPI_Comm world, double bytesPerRank, double limitPerRank,
                     bool beforeWorkspaces = false);

}  // namespace hybrid3d
