#pragma once
/// \file
/// `hybrid3d downsample`: the same dataset at a coarser resolution, each output voxel the mean of
/// a factor^3 block of input voxels per channel (as the CosmoFlow paper's 128^3 inputs are the
/// mean over 4^3 blocks of its 512^3 ones). The source is any dataset DatasetTransform.hpp takes
/// (one written by hybrid3d, the published CosmoFlow *.hdf5, MLPerf HPC's numpy pairs); every
/// sample is written again, under the same relative name as NAME.h5, with /full as float32
/// [C, S/f, S/f, S/f] whatever the source's type and channel order, the targets and the root
/// attributes (but layout) copied, and the attributes downsample_factor and source_size added;
/// the new manifest keeps every sample and its parameters and says size S/f. Files are shared
/// out over the ranks, one rank per file.

#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/generate/Manifest.hpp>

namespace hybrid3d::generate {

struct DownsampleOptions {
  std::string inDir, outDir;
  Index factor = 0;
};

std::string downsampleUsage();

/// Parses --in DIR --out DIR --factor F; one-line errors naming the flag.
DownsampleOptions parseDownsampleOptions(const std::vector<std::string>& args);

/// Mean over factor^3 blocks of a row-major [channels, S, S, S] volume; S a multiple of factor.
std::vector<float> blockMean(const std::vector<float>& volume, Index channels, Index size,
                             Index factor);

/// Writes the downsampled dataset collectively over `comm` and returns its manifest on every
/// rank. Throws on every rank alike, naming the file or flag: no dataset in inDir, a generator
/// whose input is not a density (segmentation labels are not averaged), a factor that does not
/// divide the size, an unreadable file, outDir equal to inDir or not writable.
Manifest downsampleDataset(MPI_Comm comm, const DownsampleOptions& options);

}  // namespace hybrid3d::generate
