#pragma once
/// \file
/// The tasks an architecture can name in its traits (Architecture.hpp), one file each under
/// src/model/tasks/.

#include <hybrid3d/model/Task.hpp>

namespace hybrid3d {

/// Regression of a sample's parameters: mean squared error over the targets; validation reports
/// MSE and MAE. Reads the input "/full" and the targets "/unitPar".
const TaskKind& regressionTask();
/// Per-voxel classification: softmax cross-entropy over the voxels; validation reports voxel
/// accuracy and per-class Dice. Reads the input "/volume" and the labels "/segmentation".
const TaskKind& segmentationTask();

}  // namespace hybrid3d
