#pragma once
/// \file
/// A dataset written again file by file under another directory: what `downsample` and `split`
/// share. The source is a dataset written by hybrid3d (its manifest.txt) or any directory of
/// samples `train` reads, without a manifest (the published CosmoFlow *.hdf5, MLPerf HPC's numpy
/// pairs; per split folder train/, validation/, test/ where it has them, else one train split;
/// taken as cosmology samples of the first file's width). Rank 0 reads or makes the source
/// manifest and checks it (the transform's own check, the sample files inside the source
/// directory and none twice, output directory not the input and writable) and gives it to every
/// rank. The outputs (WholeSample.hpp's ownSampleName: HDF5 NAME.h5, under the split's folder)
/// must stay inside the output directory, each written once. The source files are shared out one
/// rank per file (data/FilesOverRanks.hpp), every output written under a staging name
/// (StagedFiles.hpp) and all renamed into place once every file is written, and rank 0 writes the
/// new manifest last, recording the source directory: a transform stopped half way leaves no
/// sample under its final name, and a dataset without its manifest is one that was not finished.

#include <functional>
#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/generate/Manifest.hpp>
#include <hybrid3d/generate/SampleWriter.hpp>

namespace hybrid3d::generate {

struct DatasetTransform {
  std::string command;  // "downsample": names the command in messages
  std::string inDir, outDir;
  /// On rank 0, before anything is written: throws naming the flag when the transform does not
  /// apply to the source dataset (a generator it cannot handle, a size it does not divide).
  std::function<void(const Manifest& source)> check;
  /// The samples one source sample becomes (files relative to outDir), the same on every rank;
  /// a split's counts in the new manifest follow from them. The sample passed in names its own
  /// output (ownSampleName), not the source file.
  std::function<std::vector<ManifestSample>(const Manifest& source, const ManifestSample&)>
      outputsOf;
  /// Writes the outputs of one source file (full paths, in the order outputsOf gave them, under
  /// their staging names), on the rank that owns it.
  std::function<void(const Manifest& source, const std::string& inPath,
                     const std::vector<std::string>& outPaths)>
      write;
  /// The new manifest's size and added settings, from the source's (its samples and splits are
  /// the outputs').
  std::function<void(const Manifest& source, Manifest& result)> describe;
};

/// Runs the transform collectively over `comm` and returns the new manifest on every rank.
/// Throws on every rank alike, naming the file or flag.
Manifest transformDataset(MPI_Comm comm, const DatasetTransform& transform);

/// The source file's targets (/unitPar, when present) and root attributes, copied into `file`:
/// every transform keeps them, but for the attributes in `rewritten`, which it writes itself
/// (a downsampled dataset split again gets its own source_size).
void copyTargetsAndAttributes(const data::File& source, SampleWriter& file,
                              const std::vector<std::string>& rewritten);

/// A whole-number option in [lo, hi]: "--factor: 'x' is not a whole number in [2, 1024]".
Index parseWholeOption(const std::string& flag, const std::string& text, Index lo, Index hi);

}  // namespace hybrid3d::generate
