#pragma once
/// \file
/// A run's output directory (checkpoint.h5, metrics.csv) is the run's own while it lives:
///  - it may not lie inside a dataset directory, nor hold one (the listing would take the
///    checkpoint for a sample, and --overwrite would move files of the dataset's);
///  - it is locked (RunLock.hpp): a second run into it is refused, naming the first;
///  - a run that is not a restart refuses a directory holding an earlier run's checkpoint or
///    metrics, saying how to resume it or start over; with `overwrite` the old files are kept
///    under a dated name (checkpoint.20261202-013512.h5) and the run starts afresh;
///  - a restart drops the rows of metrics.csv after the checkpoint's step (written by the run
///    that died after that checkpoint), so the continued file has every step once.
/// Rank 0 does the work; every rank gets the same error (a WorldError).

#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/train/RunLock.hpp>

namespace hybrid3d {

struct OutputDirectoryOptions {
  std::string dir;
  std::vector<std::string> datasets;  // dataset directories or list files (empty ones skipped)
  bool restarting = false;
  long long restartStep = 0;  // with restarting: the checkpoint's step
  bool overwrite = false;     // keep an earlier run's files under a dated name and start over
};

class OutputDirectory {
public:
  /// Collective over `comm`: creates, checks and locks the directory; rank 0 prints what it did
  /// to earlier files ("hybrid3d: ..." lines).
  OutputDirectory(MPI_Comm comm, const OutputDirectoryOptions& options);
  ~OutputDirectory();  // releases the lock
  OutputDirectory(const OutputDirectory&) = delete;
  OutputDirectory& operator=(const OutputDirectory&) = delete;

private:
  std::unique_ptr<RunLock> lock_;  // rank 0 only
};

/// The rows of a metrics file's `text` whose step is at most `step` (and its header); `dropped`
/// receives how many rows went. Rows that do not parse (a torn write) go too.
std::string metricsUpToStep(const std::string& text, long long step, int& dropped);

/// Whether `inner` is `outer` or lies inside it, comparing absolute, normalised paths (symbolic
/// links of existing parts resolved).
bool pathWithin(const std::string& inner, const std::string& outer);

}  // namespace hybrid3d
