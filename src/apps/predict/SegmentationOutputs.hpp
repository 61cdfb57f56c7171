#pragma once
// One volume's segmentation as `hybrid3d predict` writes it (docs/predict.md): NIfTI in, NIfTI
// out on the input's grid (OUT/NAME.nii.gz, uint8 labels; OUT/NAME_probabilities.nii.gz, the
// softmax along t); any other input, OUT/NAME.h5 with /prediction uint8 [D,H,W] (and
// /probabilities float32 [C,D,H,W]). Each file written whole under a temporary name, then
// renamed. Rank 0 only.
#include <hybrid3d/train/Inference.hpp>

#include "PredictInputs.hpp"

namespace hybrid3d::app {

void writeSegmentation(const std::string& outDir, const VolumeFile& volume,
                       const SegmentationResult& result, Index classes);

}  // namespace hybrid3d::app
