#pragma once
/// \file
/// `hybrid3d import nifti`: medical volumes as the Medical Segmentation Decathlon ships them
/// (imagesTr/NAME.nii.gz beside labelsTr/NAME.nii.gz; NIfTI-1 or -2, .nii or .nii.gz) converted
/// into the project's segmentation samples (docs/design.md section 7), one file OUT/NAME.h5 per
/// pair:
///   /volume       float32 [C, S, S, S]: each channel normalised over its whole source volume
///                 (zero mean, unit standard deviation; a constant channel becomes 0), then
///                 cropped or zero-padded to S, centred (CentredCube.hpp): padding holds the mean
///   /segmentation uint8 [S, S, S]: the labels, cropped or padded (with 0) alike
/// Axes: [D, H, W] = NIfTI's (k, j, i), channels its 4th axis t (NiftiVolume.hpp); no
/// reorientation. Root attributes: spacing [3] (pixdim of D, H, W) and spacing_units,
/// source_shape [3] and source_offset [3] (the source voxel of output voxel 0 per axis, negative
/// where padded), channel_mean [C] and channel_std [C], the source files' names, NIfTI version
/// and voxel type. OUT/manifest.txt (Manifest.hpp: generator nifti, split train) lists the
/// samples; OUT is a dataset directory a deck's Data/train can name.
///
/// Files are shared out over the ranks, one rank per pair. Every sample is written under a
/// staging name and renamed into place only when every pair of every rank has been converted,
/// the manifest last: an import that stops on a bad file leaves no sample behind.

#include <functional>
#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/generate/Manifest.hpp>

namespace hybrid3d::generate {

struct NiftiImportOptions {
  std::string imagesDir, labelsDir, outDir;
  /// Output width S: by default inputs/unet3d_128.xml's input width; unet3d needs a multiple of 8.
  Index size = 128;
  /// Labels must lie in [0, classes): by default unet3d's 3 classes.
  int classes = 3;
};

std::string niftiImportUsage();

/// Parses `nifti --images DIR --labels DIR --out DIR [--size S] [--classes N]` (the words after
/// `hybrid3d import`); one-line errors naming the flag.
NiftiImportOptions parseNiftiImportOptions(const std::vector<std::string>& args);

/// The image files to import (names in imagesDir ending .nii or .nii.gz, sorted; names starting
/// with '.' left out, as the "._" files of archives made on macOS), each with a label file of the
/// same name in labelsDir, and outDir created empty. One rank's file-system work: throws one line
/// naming the directory or the image without a label.
std::vector<std::string> listNiftiPairs(const NiftiImportOptions& options);

/// The sample file's name of an image: NAME.nii.gz and NAME.nii -> NAME.h5.
std::string niftiSampleName(const std::string& image);

/// What one converted pair was (for the command's report and the dataset-wide checks).
struct NiftiSampleInfo {
  std::string image;  // the image's file name
  std::string line;   // one line: source shape, type, spacing -> output
  Index channels = 0;
};

/// Converts image `name` and its label into the sample file `samplePath` (written whole by this
/// rank, atomically). Throws one line naming the file: unreadable NIfTI (readNiftiVolume), a label
/// file with channels or of another shape than its image, a label that is no whole number in
/// [0, classes) (the value and its voxel named).
NiftiSampleInfo convertNiftiPair(const NiftiImportOptions& options, const std::string& name,
                                 const std::string& samplePath);

/// The import, collective over `comm`; returns the manifest on every rank. `onSample`, if set, is
/// called on rank 0 for every sample in order, once all are written. Throws on every rank alike.
Manifest importNifti(MPI_Comm comm, const NiftiImportOptions& options,
                     const std::function<void(const NiftiSampleInfo&)>& onSample = {});

}  // namespace hybrid3d::generate
