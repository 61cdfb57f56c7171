#pragma once
/// \file
/// The training input pipeline of one rank: the mini-batches of its group (BatchPlan), each
/// sample's subvolume read by SampleReader into a host staging batch, optionally one mini-batch
/// ahead on a background thread, optionally served from an in-memory cache.
///
/// Prefetch. Two HostBatch buffers, allocated once: next() hands out one while the Prefetcher
/// thread fills the other with the following mini-batch (Independent reads: no MPI call on that
/// thread). Without prefetch the same buffers are filled synchronously in next(). The data are
/// identical either way, byte for byte; only the time next() blocks differs, and that time (the
/// I/O wait the step cannot hide) is measured in LoaderStats::exposedSeconds. A read-ahead nobody
/// will use (after seek(), at the end, or while an error unwinds through the loader) stops after
/// the sample it is reading.
///
/// Cache. With a byte budget, every subvolume this rank reads is kept (input, labels and targets
/// as stored) until the budget is full, first come first kept; later epochs take those samples
/// from memory. Which samples a rank sees changes with the epoch's shuffle, so the hit rate grows
/// over epochs and is 1 once the rank has seen every sample that fits.
///
/// Errors. A failed read on any rank makes next() throw the same one-line message on every rank
/// of the world (agreeOnError), so no rank is left waiting in the gradient allreduce. Before a
/// rank reads a file it compares the file's size with the size recorded when the dataset was
/// listed (Dataset::checkUnchanged), so a file this rank sees differently is such an error too.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/data/Dataset.hpp>
#include <hybrid3d/data/HostBatch.hpp>
#include <hybrid3d/data/Prefetcher.hpp>
#include <hybrid3d/data/SampleReader.hpp>

namespace hybrid3d::data {

struct LoaderOptions {
  int globalBatch = 1;
  std::uint64_t seed = 0;
  bool shuffle = true;
  /// An evaluation pass: every sample once, in order, the last mini-batch partial
  /// (BatchPlan::evaluation; seed and shuffle unused). HostBatch::filled says how many slots hold
  /// a sample.
  bool evaluation = false;
  ReadMode mode = ReadMode::Independent;
  bool prefetch = true;        // needs Independent reads (or MPI_THREAD_MULTIPLE)
  std::size_t cacheBytes = 0;  // 0: no cache
};

struct LoaderStats {
  double exposedSeconds = 0;  // time next() blocked: the I/O the steps did not hide
  std::uint64_t batches = 0;
  std::uint64_t cacheHits = 0, cacheMisses = 0;
  std::size_t cacheBytesUsed = 0;
  ReadCounters reads;  // file reads of this rank (cache hits excluded)
};

class BatchLoader {
public:
  /// Throws, on every rank alike (the checks use only data every rank has), for an inconsistent
  /// plan, or for prefetch with Collective reads when MPI does not provide MPI_THREAD_MULTIPLE.
  /// Allocates both staging batches here; next() allocates nothing.
  BatchLoader(const ProcessGrid& grid, const Dataset& dataset, const SampleSpec& spec,
              const Subvolume& subvolume, const LoaderOptions& options);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  /// The staging batches a loader holds (one trained on, one being filled: with or without
  /// prefetch).
  static constexpr int stagingBatches = 2;
  /// What a loader allocates for `localBatch` slots of `spec` read on `sub`: its staging batches
  /// (the memory plan counts it with this; the cache's budget comes on top).
  static std::size_t stagingBytes(int localBatch, const SampleSpec& spec, const Subvolume& sub) {
    return stagingBatches * HostBatch::bytes(localBatch, spec, sub);
  }

  /// What the cache keeps of one sample whose values are stored in `elementSize` bytes: its
  /// input as stored, its labels and targets (what a hit copies back).
  static std::size_t cachedSampleBytes(const SampleSpec& spec, const Subvolume& sub,
                                       std::size_t elementSize) {
    return std::size_t(spec.channels) * std::size_t(sub.read.size()) * elementSize +
           std::size_t(labelSlotCount(spec, sub)) * sizeof(int) +
           std::size_t(targetSlotCount(spec)) * sizeof(float);
  }
  /// The most the cache of a set of `samples` holds under `budget` bytes (a rank sees every
  /// sample over the epochs), its values stored in at most 4 bytes.
  static std::size_t cacheBytesAtMost(Index samples, const SampleSpec& spec, const Subvolume& sub,
                                      std::size_t budget) {
    return std::min(budget, std::size_t(samples) * cachedSampleBytes(spec, sub, 4));
  }

  const BatchPlan& plan() const { return plan_; }
  const SampleReader& reader() const { return reader_; }
  const Dataset& dataset() const { return dataset_; }

  /// Makes (epoch, batch) the mini-batch the next call of next() returns (a restart). Discards a
  /// prefetched batch (a read-ahead in progress stops after its current sample).
  void seek(int epoch, Index batch);
  /// This group's next mini-batch, valid until the following call; batches run on across epochs
  /// (epoch e, batch 0..batchesPerEpoch()-1, then epoch e+1). Collective over the world.
  const HostBatch& next();

  /// A snapshot taken in the last next() (never races with the prefetch thread).
  const LoaderStats& stats() const { return stats_; }

private:
  struct CachedSample {
    SampleFormat format;
    std::vector<unsigned char> input;
    std::vector<int> labels;
    std::vector<float> targets;
  };

  // Runs on either thread, one at a time; the prefetch thread's read stops between samples
  // when `stop` is set.
  void load(HostBatch& into, int epoch, Index batch, const Prefetcher::StopFlag* stop = nullptr);
  void loadSample(HostBatch& into, int slot, Index sample);
  void advance(int& epoch, Index& batch) const;

  const ProcessGrid& grid_;
  Dataset dataset_;
  BatchPlan plan_;
  LoaderOptions options_;
  SampleReader reader_;
  HostBatch buffers_[stagingBatches];
  int fill_ = 0;       // buffer the next batch goes into
  int nextEpoch_ = 0;  // position of the batch next() returns
  Index nextBatch_ = 0;
  // Position of the batch the prefetcher loads: its job captures only `this` and the buffer,
  // which std::function holds without a heap allocation (a step allocates nothing).
  int aheadEpoch_ = 0;
  Index aheadBatch_ = 0;
  int orderEpoch_ = -1;  // epoch whose order is in order_
  std::vector<Index> order_;
  std::unordered_map<Index, CachedSample> cache_;
  std::size_t cacheUsed_ = 0;
  std::uint64_t hits_ = 0, misses_ = 0;
  LoaderStats stats_;
  std::unique_ptr<Prefetcher> prefetcher_;  // last: joined before the buffers go
};

}  // namespace hybrid3d::data
