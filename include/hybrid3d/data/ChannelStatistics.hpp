#pragma once
/// \file
/// Per-channel mean and standard deviation of a dataset's inputs (after log1p where asked): what
/// `hybrid3d stats` prints and a deck's `Data/channel offset = auto` / `channel scale = auto`
/// apply, so that y = (f(x) - offset) * scale (Preprocess.hpp) has mean 0 and standard deviation
/// 1 per channel over the training set: offset = mean, scale = 1 / std (population std).
///
/// One pass over all ranks: each rank reads whole files, one rank per file (FilesOverRanks.hpp),
/// through SampleReader (so every layout the readers take is read alike), a slab of planes at a
/// time. Numerics: each slab's channel is summed in double twice (its mean, then the squared
/// deviations from it), slabs and files are merged by Chan et al.'s pairwise formula in file
/// order. The per-file moments are gathered to every rank and merged there in that same order,
/// so the result is bit-identical on every rank and for every rank count.

#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/data/Dataset.hpp>
#include <hybrid3d/data/SampleReader.hpp>

namespace hybrid3d::data {

/// Count, mean and sum of squared deviations of each channel (Welford's M2).
struct ChannelMoments {
  double count = 0;
  std::vector<double> mean, m2;
  /// Chan et al.: the moments of the union of this set's values and `other`'s.
  void merge(const ChannelMoments& other);
};

struct ChannelStatistics {
  Index samples = 0;
  bool log1p = false;
  std::vector<double> mean, std;  // per channel
  std::vector<double> offsets() const { return mean; }
  std::vector<double> scales() const;  // 1 / std
};

/// The moments of one file's input (every channel, whole volume), read with `spec` on this
/// rank alone. Throws naming the file, and the channel and voxel of a value whose log1p (or
/// itself) is not a finite number (log1p of -32768 would make every mean NaN).
ChannelMoments momentsOfFile(const std::string& path, const SampleSpec& spec, bool log1p);

/// Statistics of every file of `set`, collective over `comm`. Throws on every rank, naming the
/// file (unreadable, not as `spec` says) or the channel (constant: no scale makes it unit).
ChannelStatistics channelStatistics(MPI_Comm comm, const Dataset& set, const SampleSpec& spec,
                                    bool log1p);

/// The input spec of a dataset whose shape is not known beforehand (`hybrid3d stats`): the
/// channels and extents of `input` in `file` (of a numpy sample: its array). The channels are
/// last where the first three dimensions are a cube and the last is not (the published files,
/// which carry no layout attribute), else first or last as SampleReader reads the file. Throws
/// naming the file when it has no such dataset, one of no readable layout, or a zero-length
/// dimension.
SampleSpec inputSpecOf(const std::string& file, const std::string& input = "/full");

/// The input spec every file of `set` shares (inputSpecOf of each, one rank per file), collective
/// over `comm`. Throws on every rank when one differs, naming it, its shape, a file of the shape
/// most files have (the first file's on a tie) and how many have it: the odd file is named,
/// whichever comes first.
SampleSpec commonInputSpec(MPI_Comm comm, const Dataset& set, const std::string& input = "/full");

}  // namespace hybrid3d::data
