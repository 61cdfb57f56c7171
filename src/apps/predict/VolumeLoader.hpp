#pragma once
// One input volume of `hybrid3d predict`: its extents and the truth it carries (targets or labels,
// where known), and any window of it preprocessed into the model's input as training
// preprocessed its samples (the checkpoint deck's log1p, channel offsets and scales; for NIfTI
// files first the per-channel normalisation `import nifti` applies).
//
// Sample files are read as training reads them: each rank reads the hyperslab of its own box
// plus ghosts (data::SampleReader). A NIfTI file cannot be read in parts (gzip), so rank 0 reads
// it, normalises it, and sends every rank its box.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <hybrid3d/data/Preprocess.hpp>
#include <hybrid3d/data/SampleReader.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>

#include "PredictInputs.hpp"

namespace hybrid3d::app {

/// The volume of a NIfTI file as `import nifti` normalises it: float32 [C,D,H,W], each channel
/// to zero mean and unit standard deviation over the whole volume (a constant channel to 0).
std::vector<float> normalisedNifti(const std::string& path, Index& channels, Index3& extents);

class VolumeLoader {
public:
  /// Collective over grid.worldComm(): opens `file` (rank 0 reads a NIfTI file whole), checks
  /// its channels against spec.channels and finds its truth: spec.targets, spec.labels, or for a
  /// NIfTI file the file of the same name in `labelsDir` (when given). Throws on every rank
  /// naming the file.
  VolumeLoader(const ProcessGrid& grid, const VolumeFile& file, const data::SampleSpec& spec,
               const data::PreprocessOptions& preprocessing, const std::string& labelsDir);

  const Index3& extents() const { return extents_; }
  /// Regression targets (every rank), empty when the file has none.
  const std::vector<double>& targets() const { return targets_; }
  /// Rank 0: the labels [D,H,W] when known; empty elsewhere and when unknown.
  const std::vector<std::uint8_t>& labels() const { return labels_; }
  bool hasLabels() const { return hasLabels_; }

  /// Collective: slot 0 of x from the window [origin, origin + valid) of the volume (x's other
  /// voxels zero, as if the window were a volume of its own). Throws on every rank naming the
  /// file.
  template <class T>
  void fill(const DistTensor<T, DefaultMemorySpace>& x, const Index3& origin,
            const Index3& valid) const;

private:
  // This rank's read box of `sub` (file coordinates) from rank 0's NIfTI volume, CDHW.
  std::vector<float> niftiBox(const data::Subvolume& sub) const;

  const ProcessGrid& grid_;
  VolumeFile file_;
  data::SampleSpec spec_;  // extents: the volume's; no targets or labels (read once, here)
  data::PreprocessOptions preprocessing_;
  Index3 extents_{0, 0, 0};
  std::vector<double> targets_;
  std::vector<std::uint8_t> labels_;
  bool hasLabels_ = false;
  std::vector<float> nifti_;  // rank 0, NIfTI only: the normalised volume
};

}  // namespace hybrid3d::app
