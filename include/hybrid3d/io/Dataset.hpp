#pragma once
// The sample files of a dataset, and which of them each data-parallel group reads in each
// mini-batch.
//
// Order. Epoch e visits the samples in the permutation pi_e = FisherYates(mt19937_64 seeded by
// (seed, e)) of 0..N-1 (the identity when shuffling is off). The generator, the seeding
// (std::seed_seq, whose algorithm the standard fixes) and the bounded draws are spelled out
// here, not left to std::shuffle or std::uniform_int_distribution (implementation-defined), so
// the order is the same with every compiler, on every grid and for every number of groups G.
//
// Slicing. Global mini-batch b of epoch e is positions [b*B, (b+1)*B) of pi_e, B the global
// mini-batch; group g reads its local part, positions b*B + g*L + j for j in [0, L), L = B/G.
// So the set of samples in a global mini-batch, and therefore the training trajectory, does not
// depend on G or on the spatial grid. B must be a multiple of G. An epoch has floor(N / B)
// mini-batches: the last partial one is dropped (as PyTorch's drop_last and LBANN do), so every
// step has the full mini-batch and batch statistics do not change at the epoch's end; the
// dropped samples differ from epoch to epoch.

#include <cstdint>
#include <string>
#include <vector>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::io {

class Dataset {
public:
  // `path` is a directory (every *.h5 file in it, sorted by name) or a text file listing one
  // sample path per line (relative to the list file's folder; blank lines and lines starting
  // with '#' are skipped). Throws naming the path when it is missing or yields no sample.
  static Dataset open(const std::string& path);
  explicit Dataset(std::vector<std::string> files, std::string source = "");

  Index size() const { return Index(files_.size()); }
  const std::string& file(Index i) const { return files_.at(std::size_t(i)); }
  const std::vector<std::string>& files() const { return files_; }
  const std::string& source() const { return source_; }

private:
  std::vector<std::string> files_;
  std::string source_;
};

class BatchPlan {
public:
  // Throws when B < 1, G < 1, B is not a multiple of G, or N < B (an epoch without a batch).
  BatchPlan(Index numSamples, int globalBatch, int groups, std::uint64_t seed,
            bool shuffle = true);

  Index numSamples() const { return n_; }
  int globalBatch() const { return batch_; }
  int groups() const { return groups_; }
  int localBatch() const { return batch_ / groups_; }
  Index batchesPerEpoch() const { return n_ / batch_; }

  // pi_e: the order of epoch e, a permutation of 0..N-1.
  std::vector<Index> epochOrder(int epoch) const;
  // Samples (indices into the dataset) of group g in mini-batch b of epoch e, localBatch() of them.
  std::vector<Index> samples(int epoch, Index batch, int group) const;

private:
  Index n_;
  int batch_, groups_;
  std::uint64_t seed_;
  bool shuffle_;
};

// Fisher-Yates shuffle of `v` driven by mt19937_64 seeded with (seed, stream): the same result
// with every standard library.
void shuffleDeterministic(std::vector<Index>& v, std::uint64_t seed, std::uint64_t stream);

}  // namespace hybrid3d::io
