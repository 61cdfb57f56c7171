#pragma once
/// \file
/// The sample files of a dataset, and which of them each data-parallel group reads in each
/// mini-batch.
///
/// Order. Epoch e visits the samples in the permutation pi_e = FisherYates(mt19937_64 seeded by
/// (seed, e)) of 0..N-1 (the identity when shuffling is off). The generator, the seeding
/// (std::seed_seq, whose algorithm the standard fixes) and the bounded draws are spelled out
/// here, not left to std::shuffle or std::uniform_int_distribution (implementation-defined), so
/// the order is the same with every compiler, on every grid and for every number of groups G.
///
/// Slicing. Global mini-batch b of epoch e is positions [b*B, (b+1)*B) of pi_e, B the global
/// mini-batch; group g reads its local part, positions b*B + g*L + j for j in [0, L), L = B/G.
/// So the set of samples in a global mini-batch, and therefore the training trajectory, does not
/// depend on G or on the spatial grid. B must be a multiple of G. An epoch has floor(N / B)
/// mini-batches: the last partial one is dropped (as PyTorch's drop_last and LBANN do), so every
/// step has the full mini-batch and batch statistics do not change at the epoch's end; the
/// dropped samples differ from epoch to epoch.
///
/// Evaluation plans (BatchPlan::evaluation) keep the last partial mini-batch instead: every
/// sample once, in dataset order. Group g's part of batch b is still positions
/// b*B + g*L + j (L = ceil(B/G) here, so B need not be a multiple of G), but only those below
/// min((b+1)*B, N): in the last batch a group may get fewer samples than L, or none.
///
/// Listing. On a parallel file system ranks can see different contents of one directory for a
/// while (files still being written, stale metadata caches): ranks that listed it themselves
/// would plan different batches and hang at the end of an epoch. So a run lists its dataset on
/// one rank (listOnce / openShared) and broadcasts the names and the sizes seen there; each
/// rank later compares a file's size with that record just before it reads the file
/// (checkUnchanged), so a file the ranks see differently is a one-line error naming it rather
/// than a silently different sample. One rank stats the directory, not thousands.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::data {

class Dataset {
public:
  static constexpr std::uint64_t kUnknownSize = ~std::uint64_t(0);

  /// `path` is a directory (every sample file in it: *.h5, *.hdf5 or *.data.npy, one format per
  /// directory, sorted by name, but for checkpoint*.h5 and hidden files, which a note on stdout
  /// names), one sample file (named *.h5, *.hdf5 or *.data.npy: a dataset of that sample, as a
  /// PyTorch dataset of one file reads it) or a text file listing one sample path per line
  /// (relative to the list file's folder; blank lines and lines starting with '#' are skipped).
  /// Records each file's size. Throws naming the path when it is missing, neither a directory
  /// nor a regular file (a FIFO would block the listing) or yields no sample, naming the line of
  /// a list file that is not text, and naming a listed file that does not exist. Local: every
  /// caller looks at the file system itself (use openShared in a parallel run).
  static Dataset open(const std::string& path);
  /// The given files (the command line's samples), with their sizes; throws naming a missing one.
  static Dataset ofFiles(std::vector<std::string> files, const std::string& source);
  /// Collective over `comm`: runs `list` on rank 0 only and gives every rank its result, or
  /// throws its error on every rank.
  static Dataset listOnce(MPI_Comm comm, const std::function<Dataset()>& list);
  /// listOnce of open(path).
  static Dataset openShared(MPI_Comm comm, const std::string& path);

  /// Sizes (bytes) as listed, one per file; empty: unknown (no check).
  explicit Dataset(std::vector<std::string> files, std::string source = "",
                   std::vector<std::uint64_t> bytes = {});

  Index size() const { return Index(files_.size()); }
  const std::string& file(Index i) const { return files_.at(std::size_t(i)); }
  const std::vector<std::string>& files() const { return files_; }
  const std::string& source() const { return source_; }
  /// File i's size when the dataset was listed, or kUnknownSize.
  std::uint64_t bytes(Index i) const;

  /// Throws, naming the file and `who` ("world rank 3"), when file i's size as this process sees
  /// it now differs from the listed size (or the file cannot be seen at all). No-op when the size
  /// is unknown.
  void checkUnchanged(Index i, const std::string& who) const;

private:
  std::vector<std::string> files_;
  std::string source_;
  std::vector<std::uint64_t> bytes_;
};

class BatchPlan {
public:
  /// Training: throws when B < 1, G < 1, B is not a multiple of G, or N < B (an epoch without a
  /// batch).
  BatchPlan(Index numSamples, int globalBatch, int groups, std::uint64_t seed, bool shuffle = true);
  /// Evaluation: every sample once, in order, the last batch partial; any B >= 1 (B > N too).
  static BatchPlan evaluation(Index numSamples, int globalBatch, int groups);

  Index numSamples() const { return n_; }
  int globalBatch() const { return batch_; }
  int groups() const { return groups_; }
  bool keepsPartialBatch() const { return keepPartial_; }
  /// Slots per group: B / G (training), ceil(B / G) (evaluation).
  int localBatch() const { return (batch_ + groups_ - 1) / groups_; }
  Index batchesPerEpoch() const { return keepPartial_ ? (n_ + batch_ - 1) / batch_ : n_ / batch_; }

  /// pi_e: the order of epoch e, a permutation of 0..N-1.
  std::vector<Index> epochOrder(int epoch) const;
  /// Positions in epochOrder of group g's part of mini-batch b: [first, first + count), count
  /// localBatch() except in an evaluation plan's last batch (then possibly fewer, or 0).
  Index firstPosition(Index batch, int group) const;
  int count(Index batch, int group) const;
  /// Samples (indices into the dataset) of group g in mini-batch b of epoch e, count() of them.
  std::vector<Index> samples(int epoch, Index batch, int group) const;

private:
  BatchPlan() = default;
  Index n_ = 0;
  int batch_ = 1, groups_ = 1;
  std::uint64_t seed_ = 0;
  bool shuffle_ = true;
  bool keepPartial_ = false;
};

/// Fisher-Yates shuffle of `v` driven by mt19937_64 seeded with (seed, stream): the same result
/// with every standard library.
void shuffleDeterministic(std::vector<Index>& v, std::uint64_t seed, std::uint64_t stream);

}  // namespace hybrid3d::data
