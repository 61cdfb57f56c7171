#include "SegmentationOutputs.hpp"

#include <filesystem>

#include <hybrid3d/generate/NiftiWriter.hpp>
#include <hybrid3d/generate/SampleWriter.hpp>

namespace hybrid3d::app {

void writeSegmentation(const std::string& outDir, const VolumeFile& volume,
                       const SegmentationResult& r, Index classes) {
  const std::filesystem::path dir(outDir);
  const bool probabilities = !r.probabilities.empty();
  if (volume.nifti) {
    generate::writeNiftiLabelsLike(volume.path, (dir / (volume.name + ".nii.gz")).string(),
                                   r.labels.data());
    if (probabilities)
      generate::writeNiftiChannelsLike(volume.path,
                                       (dir / (volume.name + "_probabilities.nii.gz")).string(),
                                       classes, r.probabilities.data());
    return;
  }
  const Index3& e = r.extents;
  generate::SampleWriter file(MPI_COMM_SELF, (dir / (volume.name + ".h5")).string());
  file.writeWhole("prediction", {e[0], e[1], e[2]}, r.labels.data());
  if (probabilities)
    file.writeWhole("probabilities", {classes, e[0], e[1], e[2]}, r.probabilities.data());
  file.attribute("generator", "hybrid3d predict");
  file.attribute("source", volume.path);
  file.commit();
}

}  // namespace hybrid3d::app
