#pragma once
/// \file
/// A whole synthetic dataset: the options of `hybrid3d generate`, their parsing (plain flags,
/// one-line errors naming the flag), and the driver that writes DIR/{train,validation,test}/*.h5
/// and DIR/manifest.txt collectively over a communicator.
///
/// Sample numbers run through the splits in order (train 0..N-1, then validation, then test) and
/// key every random stream: a sample depends on (seed, its number) only, never on the rank count.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/generate/CosmologyParameters.hpp>
#include <hybrid3d/generate/Manifest.hpp>

namespace hybrid3d::generate {

struct GenerateOptions {
  std::string generator;  // "cosmology" or "segmentation"
  std::string outDir;
  Index size = 0;
  Index train = 0, validation = 0, test = 0;
  std::uint64_t seed = 0;
  /// Cosmology: every sample gets these parameters instead of drawn ones (--params a,n,c,g).
  std::optional<CosmologyParameters> fixedParameters;
  double meanCount = 8.0;  // cosmology: mean particles per voxel (--mean-count)
  /// --replace: a non-empty output directory holding a dataset is replaced (what the new
  /// manifest does not list is removed afterwards); without it a non-empty one is refused.
  bool replace = false;
};

/// The usage line of the subcommand (after "hybrid3d generate").
std::string generateUsage();

/// Parses `generate` arguments: GENERATOR --out DIR --size S [--train N] [--validation N]
/// [--test N] [--seed K] [--params a,n,c,g] [--mean-count X]. Throws hybrid3d::Error with one
/// line naming the flag for an unknown flag, a missing or malformed value, or an out-of-range
/// value. Checks nothing that needs the file system or the rank count (generateDataset does).
GenerateOptions parseGenerateOptions(const std::vector<std::string>& args);

/// On one rank: whether `o.outDir` holds a dataset generated with `o`'s settings (true), holds
/// none (false: no manifest.txt), or throws naming the manifest and the first setting that
/// differs (generator, size, seed, the splits' sample counts, mean count) and the deck key.
bool existingDatasetMatches(const GenerateOptions& o);

/// Creates `OUTDIR/<split>` for every split with samples and makes sure a file can be written
/// there; returns the one-line error naming --out and the directory, or "" when all is well.
/// File-system work: call it on one rank.
std::string prepareSplitDirectories(const std::string& outDir,
                                    const std::vector<std::pair<std::string, Index>>& splits);

/// Writes the dataset collectively over `comm` and returns its manifest (on every rank).
/// Throws (on every rank alike) when the size is smaller than the rank count, the output
/// directory cannot be created or written, or it is not empty and `replace` is not set (or it
/// holds something that is not a dataset: no manifest.txt, entries other than the splits).
/// With `replace`, every file the new manifest does not list is removed afterwards, so two
/// generations never mix. `onSample`, if set, is called on every rank after
/// each sample with the sample and its wall time in seconds.
Manifest generateDataset(
    MPI_Comm comm, const GenerateOptions& options,
    const std::function<void(const ManifestSample&, double seconds)>& onSample = {});

}  // namespace hybrid3d::generate
