#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/BatchLoader.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/data/Hdf5.hpp>

#include <chrono>
#include <cstring>
#include <string>

namespace hybrid3d::data {

namespace {
BatchPlan planFor(Index samples, const LoaderOptions& o, int groups) {
  return o.evaluation ? BatchPlan::evaluation(samples, o.globalBatch, groups)
                      : BatchPlan(samples, o.globalBatch, groups, o.seed, o.shuffle);
}
}  // namespace

BatchLoader::BatchLoader(const ProcessGrid& grid, const Dataset& dataset, const SampleSpec& spec,
                         const Subvolume& subvolume, const LoaderOptions& options)
    : grid_(grid),
      dataset_(dataset),
      plan_(planFor(dataset.size(), options, grid.numGroups())),
      options_(options),
      reader_(grid.spatialComm(), spec, subvolume, options.mode) {
  if (options.prefetch && options.mode == ReadMode::Collective) {
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE)
      fail(
          "data loader: prefetch with collective (MPI-IO) reads needs MPI_THREAD_MULTIPLE; "
          "use independent reads or turn prefetch off");
  }
  for (HostBatch& b : buffers_) b = HostBatch(plan_.localBatch(), reader_);
  if (options.prefetch) {
    // The prefetch thread must make no MPI call (core/MpiThreads.hpp), and a parallel HDF5
    // initialising itself does (an attribute on MPI_COMM_SELF): initialise it here, on the main
    // thread, in case this rank has not called HDF5 yet.
    H5open();
    prefetcher_ = std::make_unique<Prefetcher>();
  }
}

BatchLoader::~BatchLoader() {
  // The read-ahead nobody will use stops after the sample being read (also while an error
  // unwinds the stack); its failure, if any, is nothing to report.
  if (prefetcher_) prefetcher_->cancel();
}

void BatchLoader::seek(int epoch, Index batch) {
  if (epoch < 0 || batch < 0 || batch >= plan_.batchesPerEpoch())
    fail("data loader: cannot seek to epoch ", epoch, " mini-batch ", batch, " of ",
         plan_.batchesPerEpoch());
  // The discarded read-ahead stops after the sample being read; the batch at the new position
  // is read again.
  if (prefetcher_) prefetcher_->cancel();
  nextEpoch_ = epoch;
  nextBatch_ = batch;
  buffers_[fill_].epoch = -1;
}

void BatchLoader::advance(int& epoch, Index& batch) const {
  if (++batch == plan_.batchesPerEpoch()) {
    batch = 0;
    ++epoch;
  }
}

void BatchLoader::loadSample(HostBatch& into, int slot, Index sample) {
  into.samples[std::size_t(slot)] = sample;
  auto hit = cache_.find(sample);
  if (hit != cache_.end()) {
    const CachedSample& c = hit->second;
    into.formats[std::size_t(slot)] = c.format;
    std::memcpy(into.inputOf(slot), c.input.data(), c.input.size());
    std::memcpy(into.labelsOf(slot), c.labels.data(), c.labels.size() * sizeof(int));
    std::memcpy(into.targetsOf(slot), c.targets.data(), c.targets.size() * sizeof(float));
    ++hits_;
    return;
  }
  ++misses_;
  dataset_.checkUnchanged(sample, "world rank " + std::to_string(grid_.worldRank()));
  const SampleFormat f = reader_.read(dataset_.file(sample), into.inputOf(slot),
                                      into.labelsOf(slot), into.targetsOf(slot));
  into.formats[std::size_t(slot)] = f;
  const std::size_t inputBytes = std::size_t(reader_.spec().channels) *
                                 std::size_t(reader_.subvolume().read.size()) * f.elementSize();
  const std::size_t bytes = cachedSampleBytes(reader_.spec(), reader_.subvolume(), f.elementSize());
  if (options_.cacheBytes > 0 && cacheUsed_ + bytes <= options_.cacheBytes) {
    CachedSample c;
    c.format = f;
    c.input.assign(into.inputOf(slot), into.inputOf(slot) + inputBytes);
    c.labels.assign(into.labelsOf(slot), into.labelsOf(slot) + reader_.labelCount());
    c.targets.assign(into.targetsOf(slot), into.targetsOf(slot) + reader_.targetCount());
    cache_.emplace(sample, std::move(c));
    cacheUsed_ += bytes;
  }
}

void BatchLoader::load(HostBatch& into, int epoch, Index batch, const Prefetcher::StopFlag* stop) {
  if (orderEpoch_ != epoch) {
    order_ = plan_.epochOrder(epoch);
    orderEpoch_ = epoch;
  }
  into.epoch = -1;  // marks the buffer incomplete until every slot is read
  const Index first = plan_.firstPosition(batch, grid_.group());
  const int count = plan_.count(batch, grid_.group());
  for (int s = 0; s < count; ++s) {
    if (stop && stop->load()) return;  // left incomplete (epoch -1): nobody will use it
    loadSample(into, s, order_[std::size_t(first + s)]);
  }
  for (int s = count; s < into.slots(); ++s) into.samples[std::size_t(s)] = -1;
  into.filled = count;
  into.epoch = epoch;
  into.batch = batch;
}

const HostBatch& BatchLoader::next() {
  const auto t0 = std::chrono::steady_clock::now();
  std::string error;
  HostBatch& ready = buffers_[fill_];
  try {
    if (prefetcher_) {
      prefetcher_->wait();
      // Nothing was in flight for this position (first call, after seek or a failure).
      if (!(ready.epoch == nextEpoch_ && ready.batch == nextBatch_))
        load(ready, nextEpoch_, nextBatch_);
    } else {
      load(ready, nextEpoch_, nextBatch_);
    }
  } catch (const Error& e) {
    error = e.what();
  }
  // The worker is idle now: its counters can be read.
  stats_.reads = reader_.counters();
  stats_.cacheHits = hits_;
  stats_.cacheMisses = misses_;
  stats_.cacheBytesUsed = cacheUsed_;
  try {
    agreeOnError(grid_.worldComm(), error);
  } catch (const Error&) {
    ready.epoch = -1;  // read again if the caller retries
    throw;
  }
  stats_.exposedSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stats_.batches += 1;

  advance(nextEpoch_, nextBatch_);
  fill_ = 1 - fill_;
  if (prefetcher_) {
    HostBatch& ahead = buffers_[fill_];
    aheadEpoch_ = nextEpoch_;  // read by the worker after submit's lock
    aheadBatch_ = nextBatch_;
    prefetcher_->submit([this, &ahead](const Prefetcher::StopFlag& stop) {
      load(ahead, aheadEpoch_, aheadBatch_, &stop);
    });
  }
  return ready;
}

}  // namespace hybrid3d::data
