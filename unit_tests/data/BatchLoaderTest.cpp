#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/BatchLoader.hpp>
#include <hybrid3d/data/Preprocess.hpp>

#include "GridCases.hpp"
#include "SampleFiles.hpp"

namespace hybrid3d::test {
namespace {

using data::LoaderOptions;
using data::ReadMode;

const Index3 kExtents{6, 5, 4};
const int kChannels = 4;
const int kSamples = 7;  // 3 mini-batches of 2 per epoch, one sample dropped

// Non-negative counts (log1p needs them), stored in mixed forms as real datasets may be.
const data::Dataset& countsDataset() {
  static const data::Dataset dataset = [] {
    std::vector<std::string> paths;
    for (int i = 0; i < kSamples; ++i)
      paths.push_back(scratch("counts" + std::to_string(i) + ".h5"));
    onRankZero([&] {
      for (int i = 0; i < kSamples; ++i) {
        const SampleData s = makeSample(kChannels, kExtents, 100 + i, 0, 1000);
        const TestLayout layout = i % 3 == 2 ? TestLayout::DHWC : TestLayout::CDHW;
        writeSample(paths[i], s,
                    {"/full", i % 2 ? FileType::NativeFloat : FileType::Int16LE, layout});
      }
    });
    return data::Dataset(paths);
  }();
  return dataset;
}

const data::PreprocessOptions kPreprocess{true, {0.5, 1.0, 2.0, 0.25}, {0.1, -0.2, 0.3, 0.0}};

// The preprocessed input tensors and targets of `steps` consecutive mini-batches.
struct LoaderRun {
  std::vector<std::vector<float>> inputs, targets;
  std::vector<std::vector<Index>> samples;
  data::LoaderStats stats;
};

LoaderRun runLoader(const ProcessGrid& grid, const LoaderOptions& options, int steps) {
  const data::Dataset& dataset = countsDataset();
  const BlockDecomposition dec(kExtents, grid.dims());
  auto x = createDistTensor<float>("x", options.globalBatch / grid.numGroups(), kChannels, dec,
                                   grid.coords(), GhostWidths::uniform(1));
  const auto sub = data::Subvolume::of(x);
  data::BatchLoader loader(grid, dataset, data::SampleSpec::cosmology(kChannels, kExtents), sub,
                           options);
  data::Preprocess<float> preprocess(kPreprocess, kChannels, sub);
  LoaderRun run;
  for (int s = 0; s < steps; ++s) {
    const data::HostBatch& batch = loader.next();
    preprocess.apply(DefaultExecutionSpace(), batch, x);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x.view());
    run.inputs.emplace_back(h.data(), h.data() + h.size());
    run.targets.emplace_back(batch.targets.data(), batch.targets.data() + batch.targets.size());
    run.samples.push_back(batch.samples);
  }
  run.stats = loader.stats();
  return run;
}

LoaderOptions options(bool prefetch, std::size_t cache = 0) {
  LoaderOptions o;
  o.globalBatch = 2;
  o.seed = 2024;
  o.prefetch = prefetch;
  o.cacheBytes = cache;
  return o;
}

TEST(BatchLoader, PrefetchOnAndOffGiveBitIdenticalTensors) {
  countsDataset();
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const int steps = 7;  // more than two epochs: crosses epoch boundaries while prefetching
    const LoaderRun off = runLoader(grid, options(false), steps);
    for (const LoaderRun& other : {runLoader(grid, options(true), steps),
                                   runLoader(grid, options(true, std::size_t(1) << 30), steps)}) {
      EXPECT_EQ(other.samples, off.samples);
      EXPECT_EQ(other.targets, off.targets);
      for (int s = 0; s < steps; ++s) {
        Index differ = 0;
        for (std::size_t i = 0; i < off.inputs[s].size(); ++i)
          differ += other.inputs[s][i] != off.inputs[s][i];  // bitwise, not within tolerance
        EXPECT_EQ(differ, 0) << "step " << s;
      }
    }
    // The samples are those of the plan, epoch after epoch.
    const data::BatchPlan plan(kSamples, 2, grid.numGroups(), 2024);
    for (int s = 0; s < steps; ++s)
      EXPECT_EQ(off.samples[s], plan.samples(s / 3, s % 3, grid.group()));
  });
}

TEST(BatchLoader, CollectiveReadsGiveTheSameBatchesAsIndependentOnes) {
  // The reader tests compare the two modes on every grid; here the loader's use of them, on an
  // uneven grid and with two groups.
  countsDataset();
  forEachGrid({{{1, 1, 1}, 1}, {{2, 1, 1}, 2}, {{1, 3, 2}, 1}, {{2, 2, 2}, 1}},
              [&](const ProcessGrid& grid, const GridCase&) {
                LoaderOptions collective = options(false);
                collective.mode = ReadMode::Collective;
                const LoaderRun a = runLoader(grid, collective, 4),
                                b = runLoader(grid, options(true), 4);
                EXPECT_EQ(a.inputs, b.inputs);
                EXPECT_EQ(a.targets, b.targets);
              });
}

TEST(BatchLoader, CacheServesLaterEpochsFromMemory) {
  countsDataset();
  forEachGrid({{{1, 1, 1}, 1}, {{2, 1, 1}, 1}, {{1, 2, 2}, 2}}, [&](const ProcessGrid& grid,
                                                                    const GridCase&) {
    const int steps = 3 * 6;  // six epochs
    const LoaderRun cached = runLoader(grid, options(true, std::size_t(1) << 30), steps);
    const data::LoaderStats& st = cached.stats;
    const int local = 2 / grid.numGroups();
    EXPECT_EQ(st.cacheHits + st.cacheMisses, std::uint64_t(steps * local));
    EXPECT_EQ(st.reads.samples, st.cacheMisses);         // every miss, and only misses, read a file
    EXPECT_LE(st.cacheMisses, std::uint64_t(kSamples));  // no sample read twice
    EXPECT_GT(st.cacheHits, 0u);
    // A budget smaller than one subvolume caches nothing.
    const LoaderRun tiny = runLoader(grid, options(true, 1), 6);
    EXPECT_EQ(tiny.stats.cacheHits, 0u);
    EXPECT_EQ(tiny.stats.reads.samples, std::uint64_t(6 * local));
  });
}

// Runs the loader for up to `steps` batches until it throws; expects every rank of the world to
// throw at the same step and returns this rank's message (empty if it never threw).
std::string expectEveryRankFailsAtTheSameStep(data::BatchLoader& loader, int steps,
                                              const ProcessGrid& grid) {
  int failedAt = -1;
  std::string message;
  for (int step = 0; step < steps && failedAt < 0; ++step) {
    try {
      loader.next();
    } catch (const Error& e) {
      failedAt = step;
      message = e.what();
    }
  }
  EXPECT_GE(failedAt, 0);
  int lo = failedAt, hi = failedAt;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, grid.worldComm());
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, grid.worldComm());
  EXPECT_EQ(lo, hi);
  return message;
}

TEST(BatchLoader, AFailedReadThrowsTheSameMessageOnEveryRank) {
  // One unreadable sample among good ones: whichever group meets it, every rank of the world
  // throws at the same step with the file's name.
  const data::Dataset& good = countsDataset();
  const std::string bad = scratch("unreadable.h5");
  onRankZero([&] { std::ofstream(bad) << "garbage"; });
  std::vector<std::string> paths = good.files();
  paths[3] = bad;
  const data::Dataset dataset(paths);
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    for (bool prefetch : {false, true}) {
      const BlockDecomposition dec(kExtents, grid.dims());
      const data::Subvolume sub(dec, grid.coords(), GhostWidths::uniform(1));
      data::BatchLoader loader(grid, dataset, data::SampleSpec::cosmology(kChannels, kExtents), sub,
                               options(prefetch));
      const std::string message = expectEveryRankFailsAtTheSameStep(loader, 3, grid);
      EXPECT_NE(message.find(bad), std::string::npos) << message;
    }
  });
}

TEST(BatchLoader, AFileThatChangedSinceTheListingStopsEveryRankNamingIt) {
  // The dataset is listed (with sizes) on rank 0; then one file grows, as a file still being
  // written does. It stays a readable HDF5 file, so only the size check can tell: whichever
  // group reads it, every rank throws at the same step, naming it.
  const data::Dataset& good = countsDataset();
  std::vector<std::string> paths;
  onRankZero([&] {
    for (Index i = 0; i < good.size(); ++i)
      std::filesystem::copy_file(good.file(i), scratch("grown" + std::to_string(i) + ".h5"),
                                 std::filesystem::copy_options::overwrite_existing);
  });
  for (Index i = 0; i < good.size(); ++i)
    paths.push_back(scratch("grown" + std::to_string(i) + ".h5"));
  const data::Dataset listed = data::Dataset::listOnce(
      MPI_COMM_WORLD, [&] { return data::Dataset::ofFiles(paths, "test"); });
  onRankZero([&] { std::ofstream(paths[3], std::ios::app) << "appended"; });
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const BlockDecomposition dec(kExtents, grid.dims());
    const data::Subvolume sub(dec, grid.coords(), GhostWidths::uniform(1));
    LoaderOptions o = options(true);
    o.evaluation = true;  // every sample in the first pass
    data::BatchLoader loader(grid, listed, data::SampleSpec::cosmology(kChannels, kExtents), sub,
                             o);
    const std::string message =
        expectEveryRankFailsAtTheSameStep(loader, int(loader.plan().batchesPerEpoch()), grid);
    EXPECT_NE(message.find(paths[3] + ": "), std::string::npos) << message;
    EXPECT_NE(message.find("bytes when the dataset was listed"), std::string::npos) << message;
  });
}

TEST(BatchLoader, AnEvaluationPassFillsOnlyTheSlotsOfRealSamples) {
  countsDataset();
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    LoaderOptions o = options(true);
    o.evaluation = true;
    o.globalBatch = 3;  // 7 samples: batches of 3, 3, 1
    const BlockDecomposition dec(kExtents, grid.dims());
    const data::Subvolume sub(dec, grid.coords(), GhostWidths::uniform(1));
    data::BatchLoader loader(grid, countsDataset(),
                             data::SampleSpec::cosmology(kChannels, kExtents), sub, o);
    ASSERT_EQ(loader.plan().batchesPerEpoch(), 3);
    for (int pass = 0; pass < 2; ++pass)
      for (Index b = 0; b < 3; ++b) {
        const data::HostBatch& batch = loader.next();
        const std::vector<Index> want = loader.plan().samples(0, b, grid.group());
        ASSERT_EQ(batch.filled, int(want.size()));
        for (int s = 0; s < batch.slots(); ++s)
          EXPECT_EQ(batch.samples[std::size_t(s)], s < batch.filled ? want[std::size_t(s)] : -1);
      }
  });
}

// The memory plan counts a loader's staging batches with HostBatch::bytes (plan/RankMemory.hpp):
// it must be what a HostBatch allocates, for a cosmology spec (targets) and a segmentation spec
// (labels), on every rank's ghosted subvolume of every grid.
TEST(BatchLoader, HostBatchBytesAreWhatItAllocates) {
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const BlockDecomposition dec(kExtents, grid.dims());
    const data::Subvolume sub(dec, grid.coords(), GhostWidths::uniform(1));
    for (const data::SampleSpec& spec : {data::SampleSpec::cosmology(kChannels, kExtents),
                                         data::SampleSpec::segmentation(kChannels, kExtents, 3)}) {
      const data::SampleReader reader(MPI_COMM_SELF, spec, sub, ReadMode::Independent);
      const data::HostBatch batch(3, reader);
      const std::size_t allocated = batch.input.span() * sizeof(unsigned char) +
                                    batch.labels.span() * sizeof(int) +
                                    batch.targets.span() * sizeof(float);
      EXPECT_EQ(data::HostBatch::bytes(3, spec, sub), allocated) << spec.input;
      EXPECT_EQ(data::BatchLoader::stagingBytes(3, spec, sub),
                data::BatchLoader::stagingBatches * allocated);
    }
  });
}

// seek() and the destructor stop a read-ahead in flight (the Prefetcher tests show how
// promptly); the half-read batch is never served: the batch at the new position is the one a
// loader without prefetch reads there, and an error unwinding through the loader while it reads
// ahead ends in the catch, not in a hang or a crash.
TEST(BatchLoader, ASeekOrAnErrorDuringAReadAheadDiscardsIt) {
  countsDataset();
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const LoaderRun off = runLoader(grid, options(false), 5);  // step 4 = epoch 1, batch 1
    const BlockDecomposition dec(kExtents, grid.dims());
    const data::Subvolume sub(dec, grid.coords(), GhostWidths::uniform(1));
    bool caught = false;
    try {
      data::BatchLoader loader(grid, countsDataset(),
                               data::SampleSpec::cosmology(kChannels, kExtents), sub,
                               options(true));
      loader.next();  // starts reading batch 1 of epoch 0 ahead
      loader.seek(1, 1);
      const data::HostBatch& batch = loader.next();
      EXPECT_EQ(batch.epoch, 1);
      EXPECT_EQ(batch.batch, 1);
      EXPECT_EQ(batch.samples, off.samples[4]);
      EXPECT_EQ(
          std::vector<float>(batch.targets.data(), batch.targets.data() + batch.targets.size()),
          off.targets[4]);
      throw std::runtime_error("a step failed");  // batch 2 is being read ahead
    } catch (const std::runtime_error&) {
      caught = true;
    }
    EXPECT_TRUE(caught);
  });
}

TEST(Preprocess, AppliesLog1pAndPerChannelScale) {
  countsDataset();
  forEachGrid({{{1, 1, 1}, 1}, {{2, 1, 1}, 1}, {{1, 3, 2}, 1}}, [&](const ProcessGrid& grid,
                                                                    const GridCase&) {
    LoaderOptions o = options(false);
    o.globalBatch = 1;
    o.shuffle = false;
    const LoaderRun run = runLoader(grid, o, 3);  // files 0 (int16), 1 (float32), 2 (DHWC)
    const BlockDecomposition dec(kExtents, grid.dims());
    const data::Subvolume sub(dec, grid.coords(), GhostWidths::uniform(1));
    const Box3& local = sub.local;
    for (int s = 0; s < 3; ++s) {
      const data::File whole(countsDataset().file(s));
      const std::vector<float> all = whole.read<float>("/full");
      const bool last = whole.hasAttribute("layout");
      const Index3& e = kExtents;
      double worst = 0;
      std::size_t i = 0;
      for (Index c = 0; c < kChannels; ++c)
        for (Index d = local.lo[0]; d < local.hi[0]; ++d)
          for (Index h = local.lo[1]; h < local.hi[1]; ++h)
            for (Index w = local.lo[2]; w < local.hi[2]; ++w, ++i) {
              const bool inside = d >= 0 && d < e[0] && h >= 0 && h < e[1] && w >= 0 && w < e[2];
              const float v = !inside ? 0.0f
                              : last ? all[std::size_t(((d * e[1] + h) * e[2] + w) * kChannels + c)]
                                     : all[std::size_t(((c * e[0] + d) * e[1] + h) * e[2] + w)];
              // Padding stays zero; inside, (log1p(v) - offset) * scale.
              const double want = !inside ? 0.0
                                          : (std::log1p(double(v)) - kPreprocess.channelOffset[c]) *
                                                kPreprocess.channelScale[c];
              worst = std::max(worst, std::abs(run.inputs[s][i] - want) / (1 + std::abs(want)));
            }
      EXPECT_LE(worst, 1e-6) << "sample " << s;
    }
  });
}

}  // namespace
}  // namespace hybrid3d::test
