#pragma once
/// \file
/// The channel statistics of a training set computed once and kept beside it, for decks that say
/// `Data/channel offset = auto` (and `hybrid3d stats`, which fills the same cache).
///
/// The cache is a small text file: a directory's in the directory (.hybrid3d_channel_statistics,
/// or ..._log1p), a list file's beside it (.LIST.hybrid3d_channel_statistics[_log1p]); hidden,
/// and not *.h5, so no listing takes it for a sample. It is keyed by a 64-bit FNV-1a digest of
/// the file list as listed, each file's size and modification time, the channels, extents and
/// the log1p flag: a changed, added or removed file, or another flag, recomputes. It is written
/// under a temporary name and renamed, so a reader never sees half of one; one that does not
/// parse (edited or damaged) is recomputed and replaced, with a note; a directory that cannot be
/// written is computed without caching, with a note.

#include <string>

#include <mpi.h>

#include <hybrid3d/data/ChannelStatistics.hpp>

namespace hybrid3d::data {

struct CachedStatistics {
  ChannelStatistics statistics;
  bool fromCache = false;
  std::string note;  // on rank 0: where the values came from and went (one line, for the log)
};

/// The cache file of the training set named `path` (a directory or a list file).
std::string channelStatisticsCachePath(const std::string& path, bool log1p);

/// Collective over `comm`: the cached statistics of `set` when the cache at `cachePath` matches
/// it, else computed (channelStatistics) and cached there. An empty cachePath computes without
/// caching. Throws on every rank as channelStatistics does.
CachedStatistics cachedChannelStatistics(MPI_Comm comm, const Dataset& set, const SampleSpec& spec,
                                         bool log1p, const std::string& cachePath);

}  // namespace hybrid3d::data
