#pragma once
// The models of DESIGN.md section 6, exactly: cosmoflow (LBANN 2020), cosmoflow_mlperf (MLPerf
// HPC reference) and unet3d (LBANN 2020), with the layer and parameter names checkpoints use.

#include <cstdint>
#include <memory>
#include <string>

#include <hybrid3d/layers/ConvEngine.hpp>
#include <hybrid3d/model/Graph.hpp>

namespace hybrid3d {

struct ModelOptions {
  std::string architecture = "cosmoflow";  // cosmoflow | cosmoflow_mlperf | unet3d
  int inputWidth = 128;                    // S: input S^3 voxels
  int batch = 1;                           // samples per data-parallel group per step
  std::uint64_t seed = 1;                  // parameter initialisation
  double dropoutKeep = -1;                 // < 0: the model's own; 1 disables dropout
  bool batchNormPerGroup = false;          // statistics per spatial group, not global
  std::size_t convWorkspaceBytes = std::size_t(64) << 20;  // kokkos engine's im2col bound
  ConvEngine convEngine = ConvEngine::Auto;                 // every Conv3d's engine
  bool convOverlap = convOverlapByDefault;                  // Conv3d's halo/compute overlap
};

enum class LossKind { MeanSquaredError, SoftmaxCrossEntropy };

// What an architecture reads and produces, from the options alone: no layer is built.
struct ModelTraits {
  int inputChannels = 0;
  int outputs = 0;  // regression targets or segmentation classes
  LossKind loss = LossKind::MeanSquaredError;
  bool log1pOfInput = false;  // the model takes log(1 + x) of its input itself (a layer)
};

// Throws naming the option when the architecture is unknown, the input width does not suit it
// or the batch is not positive: the checks buildModel and planModel (ModelPlan.hpp) share.
ModelTraits modelTraits(const ModelOptions& options);

template <class T, class MemorySpace = DefaultMemorySpace>
struct Model {
  HYBRID3D_ASSERT_SPACE(MemorySpace);
  std::string architecture;
  std::unique_ptr<Graph<T, MemorySpace>> graph;
  LossKind loss = LossKind::MeanSquaredError;
  int inputChannels = 0;
  int outputs = 0;  // regression targets or segmentation classes
  bool log1pOfInput = false;  // the model takes log(1 + x) of its input itself (a layer)
};

// Builds, finalizes and initialises the model on `grid`. Throws naming the option when the
// architecture is unknown or the input width does not suit it.
template <class T, class MemorySpace = DefaultMemorySpace>
Model<T, MemorySpace> buildModel(const ProcessGrid& grid, const ModelOptions& options);

}  // namespace hybrid3d
