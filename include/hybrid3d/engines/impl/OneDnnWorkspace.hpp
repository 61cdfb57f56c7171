#pragma once
// The shared host workspace (HostWorkspace.hpp) a onednn convolution of `problem` reserves:
// its operands' blocked copies and the largest pass's scratchpad, asked of oneDNN without
// building primitives or allocating. A dry run predicts a rank's memory with it
// (model/ModelPlan.hpp); OneDnnConvolution reserves exactly this. Only in builds with oneDNN.

#include <cstddef>

#include <hybrid3d/Config.hpp>

#if HYBRID3D_ENABLE_ONEDNN

#include <hybrid3d/engines/impl/LocalConvolution.hpp>

namespace hybrid3d::Impl {
std::size_t oneDnnWorkspaceBytes(const LocalConvProblem& problem);
}  // namespace hybrid3d::Impl

#endif
