#pragma once
/// \file
/// A trained model applied to whole volumes (`hybrid3d predict`): the model built for one input
/// extent in inference mode (ModelOptions::inference: no gradients, no backward workspaces,
/// batch-norm running statistics, no dropout), its parameters and buffers from a checkpoint, its
/// input decomposed over the spatial grid as in training. What the forward pass produced is
/// reduced where it lies (class argmax and softmax per voxel on the rank owning the voxel) and
/// only then gathered to rank 0, which writes the files: no rank holds a float volume per class.

#include <cstdint>
#include <string>
#include <vector>

#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/model/Models.hpp>

namespace hybrid3d {

/// One volume's segmentation on rank 0 (empty elsewhere), cropped to the volume's extents.
struct SegmentationResult {
  Index3 extents{0, 0, 0};
  std::vector<std::uint8_t> labels;  // [D,H,W]: the class of largest logit (the first at ties)
  std::vector<float> probabilities;  // [C,D,H,W] softmax, when asked for; else empty
};

template <class T, class MemorySpace = DefaultMemorySpace>
class InferenceModel {
  HYBRID3D_ASSERT_SPACE(MemorySpace);

public:
  using execution_space = typename MemorySpace::execution_space;

  /// Collective over grid.worldComm() (one spatial group: the world is the spatial grid). Builds
  /// the model for `options` (inference forced on, batch 1) and reads its parameters and buffers
  /// from `checkpoint`; throws naming the file on a damaged checkpoint or one of another model.
  InferenceModel(const ProcessGrid& grid, ModelOptions options, const std::string& checkpoint);

  const Model<T, MemorySpace>& model() const { return model_; }
  /// The input volume to fill (its owned cells and ghosts: data::Preprocess does both).
  const DistTensor<T, MemorySpace>& input() const { return model_.graph->input().volume; }
  void forward();

  /// Regression: the outputs of the last forward (every rank has them).
  std::vector<double> outputs() const;
  /// Segmentation: labels (and probabilities) of the voxels in [0, valid) of the last forward,
  /// gathered on rank 0. Collective.
  SegmentationResult segmentation(const Index3& valid, bool probabilities) const;

private:
  const ProcessGrid& grid_;
  execution_space exec_;
  Model<T, MemorySpace> model_;
};

extern template class InferenceModel<float, DefaultMemorySpace>;
extern template class InferenceModel<double, DefaultMemorySpace>;
extern template class InferenceModel<bfloat16, DefaultMemorySpace>;
extern template class InferenceModel<float16, DefaultMemorySpace>;

}  // namespace hybrid3d
