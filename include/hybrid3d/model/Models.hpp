#pragma once
/// \file
/// A model: the graph of a registered architecture (Architecture.hpp; docs/design.md section 6 for
/// cosmoflow, cosmoflow_mlperf and unet3d) with the layer and parameter names checkpoints use,
/// and the task it is trained for (Task.hpp).

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
  /// The grids its layers run on (before the graph: the layers borrow their communicators).
  std::unique_ptr<LayerGridSet> grids;
  std::unique_ptr<Graph<T, MemorySpace>> graph;
  /// Its loss, truth buffers and metrics; none for an inference model (ModelOptions::inference).
  std::unique_ptr<Task<T, MemorySpace>> task;
  int inputChannels = 0;
  int outputs = 0;            // regression targets or segmentation classes
  bool log1pOfInput = false;  // the model takes log(1 + x) of its input itself (a layer)
};

/// Builds, finalizes and initialises the model on `grid`, and makes its task. Each layer runs on
/// the grid options.layerGrids gives it (model/LayerGridRule.hpp), a redistribution inserted
/// where a layer's input is on another grid. Throws naming the option when the architecture is
/// unknown or the input width does not suit it, naming the layer when its grid cannot run it.
template <class T, class MemorySpace = DefaultMemorySpace>
Model<T, MemorySpace> buildModel(const ProcessGrid& grid, const ModelOptions& options);

}  // namespace hybrid3d
