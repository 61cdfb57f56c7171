#pragma once
/// \file
/// Over which ranks a parameter's gradient is summed before the optimizer step.

namespace hybrid3d {

enum class GradientScope {
  /// Every rank of the world (spatial x data): the parameter is replicated everywhere.
  World,
  /// Only the ranks at the same spatial position, one per data-parallel group
  /// (ProcessGrid::dataComm()): each rank of a spatial group holds a disjoint part of the
  /// parameter, and nobody else contributes to that part.
  DataParallel,
};

}  // namespace hybrid3d
