#pragma once
/// \file
/// What a model is built from: the architecture's name (Architecture.hpp lists the registered
/// ones), the input width (or, for inference on whole volumes, per-axis extents) and batch, and
/// the options every architecture's layers share.

#include <cstddef>
#include <cstdint>
#include <string>

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/engines/ConvEngine.hpp>
#include <hybrid3d/model/LayerGridRule.hpp>
#include <hybrid3d/model/Recompute.hpp>

namespace hybrid3d {

struct ModelOptions {
  std::string architecture = "cosmoflow";  // a registered name (architectureNames())
  int inputWidth = 128;                    // S: input S^3 voxels
  /// (D,H,W) of the input when not a cube (`hybrid3d predict` on a whole volume); zeros: S^3.
  /// Architectures check each extent as they check S (unet3d: multiples of 8).
  Index3 inputExtents{0, 0, 0};
  int batch = 1;                   // samples per data-parallel group per step
  std::uint64_t seed = 1;          // parameter initialisation
  double dropoutKeep = -1;         // < 0: the model's own; 1 disables dropout
  bool batchNormPerGroup = false;  // statistics per spatial group, not global
  std::size_t convWorkspaceBytes = std::size_t(64) << 20;  // kokkos engine's im2col bound
  ConvEngine convEngine = ConvEngine::Auto;                // every Conv3d's engine
  bool convOverlap = convOverlapByDefault;                 // Conv3d's halo/compute overlap
  LayerGridRule layerGrids;  // which layers run on other grids than the spatial grid
  /// Which activations a training step recomputes in its backward pass (model/Recompute.hpp);
  /// `auto` is resolved to ranges by the planner before a model is built.
  RecomputeOption recompute;
  /// Forward only (`hybrid3d predict`): no activation or parameter gradients, no backward
  /// workspaces are allocated; the model runs in evaluation mode.
  bool inference = false;

  /// The input's (D,H,W): inputExtents where set, else S^3.
  Index3 extents() const {
    if (inputExtents[0] > 0) return inputExtents;
    return {Index(inputWidth), Index(inputWidth), Index(inputWidth)};
  }
};

}  // namespace hybrid3d
