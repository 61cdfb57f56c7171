#pragma once
// A model: the graph of a registered architecture (Architecture.hpp; DESIGN.md section 6 for
// cosmoflow, cosmoflow_mlperf and unet3d) with the layer and parameter names checkpoints use,
// and the task it is trained for (Task.hpp).

#include <memory>
#include <string>

#include <hybrid3d/model/Architecture.hpp>
#include <hybrid3d/model/Graph.hpp>
#include <hybrid3d/model/ModelOptions.hpp>
#include <hybrid3d/model/Task.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
struct Model {
  HYBRID3D_ASSERT_SPACE(MemorySpace);
  std::string architecture;
  std::unique_ptr<Graph<T, MemorySpace>> graph;
  std::unique_ptr<Task<T, MemorySpace>> task;  // its loss, truth buffers and metrics
  int inputChannels = 0;
  int outputs = 0;            // regression targets or segmentation classes
  bool log1pOfInput = false;  // the model takes log(1 + x) of its input itself (a layer)
};

// Builds, finalizes and initialises the model on `grid`, and makes its task. Throws naming the
// option when the architecture is unknown or the input width does not suit it.
template <class T, class MemorySpace = DefaultMemorySpace>
Model<T, MemorySpace> buildModel(const ProcessGrid& grid, const ModelOptions& options);

}  // namespace hybrid3d
