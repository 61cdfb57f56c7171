#include <algorithm>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/data/Dataset.hpp>
#include <hybrid3d/data/SampleReader.hpp>
#include <hybrid3d/train/RunChecks.hpp>
#include <hybrid3d/plan/RunPlan.hpp>

namespace hybrid3d {

namespace {

// The set cut as the trainer's BatchLoader cuts it: training drops the last partial
// mini-batch, evaluation keeps it.
SetPlan planSet(const SetListing& listing, int batch, int groups, const TrainConfig& config,
                bool training) {
  const data::BatchPlan p = training ? data::BatchPlan(listing.samples, batch, groups,
                                                       config.model.seed, config.data.shuffle)
                                     : data::BatchPlan::evaluation(listing.samples, batch, groups);
  SetPlan s;
  s.listing = listing;
  s.batch = p.globalBatch();
  s.localBatch = p.localBatch();
  s.steps = p.batchesPerEpoch();
  s.keepsPartialBatch = p.keepsPartialBatch();
  return s;
}

SetListing listingOf(const data::Dataset& set) { return {set.source(), set.size()}; }

// Checks the metadata (datasets, shapes, types) of every file of `set` as a reader does before
// it reads, each rank a share of the files, plus that each file still has its listed size.
// Collective over `world`: any rank's failure is thrown on every rank.
void inspectSamples(MPI_Comm world, const data::Dataset& set, const data::SampleSpec& spec) {
  int rank, size;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  data::collectively(world, [&] {
    // A whole-volume reader: inspect() looks at the spec only, never at a subvolume.
    const BlockDecomposition whole(spec.extents, {1, 1, 1});
    const data::SampleReader reader(MPI_COMM_SELF, spec, data::Subvolume(whole, {0, 0, 0}, {}),
                                    data::ReadMode::Independent);
    const std::string who = "world rank " + std::to_string(rank);
    for (Index i = rank; i < set.size(); i += size) {
      set.checkUnchanged(i, who);
      reader.inspect(set.file(i));
    }
  });
}

}  // namespace

int RunPlan::smallestRank() const {
  auto total = [](const GraphMemory& a, const GraphMemory& b) { return a.total() < b.total(); };
  return int(std::min_element(memory.begin(), memory.end(), total) - memory.begin());
}

int RunPlan::largestRank() const {
  auto total = [](const GraphMemory& a, const GraphMemory& b) { return a.total() < b.total(); };
  return int(std::max_element(memory.begin(), memory.end(), total) - memory.begin());
}

template <class T, class M>
RunPlan planRun(const TrainConfig& config, const Int3& grid, int groups, const SetListing& train,
                const SetListing& validation) {
  checkTrainConfig(config, groups);
  RunPlan r;
  r.groups = groups;
  r.grid = grid;
  r.world = groups * grid[0] * grid[1] * grid[2];
  r.precision = precisionOf<T>();
  r.model = planModel(groupModelOptions(config, groups), grid);
  r.optimizerStates = config.optimizer == "adam" ? 2 : config.sgd.momentum > 0 ? 1 : 0;
  r.stateSharding = config.stateSharding;
  r.prefetch = config.data.prefetch;
  r.cacheBytes = config.data.cacheBytes;
  r.log1p = config.data.log1p;
  for (int d = 0; d < grid[0]; ++d)  // spatial rank order: row-major (D, H, W), as MPI_Cart
    for (int h = 0; h < grid[1]; ++h)
      for (int w = 0; w < grid[2]; ++w) r.memory.push_back(predictMemory<T, M>(r.model, {d, h, w}));
  r.epochs = config.epochs;
  r.train = planSet(train, config.globalBatch, groups, config, true);
  if (validation.samples > 0)
    r.validation = planSet(validation,
                           config.validationBatch > 0 ? config.validationBatch : config.globalBatch,
                           groups, config, false);
  const long long all = static_cast<long long>(r.train.steps) * config.epochs;
  r.totalSteps = config.maxSteps >= 0 ? std::min<long long>(config.maxSteps, all) : all;
  return r;
}

template <class T, class M>
std::size_t largestRankBytesBeforeEngines(const TrainConfig& config, const Int3& grid, int groups) {
  checkTrainConfig(config, groups);
  const ModelPlan model = planModel(groupModelOptions(config, groups), grid);
  std::size_t largest = 0;
  for (int d = 0; d < grid[0]; ++d)
    for (int h = 0; h < grid[1]; ++h)
      for (int w = 0; w < grid[2]; ++w)
        largest = std::max(largest, predictMemoryBeforeEngines<T, M>(model, {d, h, w}).total());
  return largest;
}

std::pair<SetListing, SetListing> checkDatasets(MPI_Comm world, const TrainConfig& config,
                                                int groups, const data::SampleSpec& spec,
                                                const SetListing& train,
                                                const SetListing& validation) {
  SetListing t = train, v = validation;
  if (t.source.empty()) {
    const data::Dataset set = listDataset(world, config, true);
    t = listingOf(set);
    planSet(t, config.globalBatch, groups, config, true);  // its size before its files
    inspectSamples(world, set, spec);
  }
  if (v.source.empty() && !config.data.validation.empty()) {
    const data::Dataset set = listDataset(world, config, false);
    v = listingOf(set);
    inspectSamples(world, set, spec);
  }
  return {t, v};
}

template <class T, class M>
RunPlan checkRun(const ProcessGrid& grid, const TrainConfig& config, const SetListing& train,
                 const SetListing& validation) {
  const int groups = grid.numGroups();
  // In the order a run meets them: configuration, the model on this grid, then the data.
  checkTrainConfig(config, groups);
  const ModelPlan model = planModel(groupModelOptions(config, groups), grid.dims());
  const auto [t, v] =
      checkDatasets(grid.worldComm(), config, groups,
                    sampleSpec(model.traits, model.input.extents, config.data), train, validation);
  return planRun<T, M>(config, grid.dims(), groups, t, v);
}

template RunPlan planRun<float, DefaultMemorySpace>(const TrainConfig&, const Int3&, int,
                                                    const SetListing&, const SetListing&);
template RunPlan planRun<double, DefaultMemorySpace>(const TrainConfig&, const Int3&, int,
                                                     const SetListing&, const SetListing&);
template std::size_t largestRankBytesBeforeEngines<float, DefaultMemorySpace>(const TrainConfig&,
                                                                              const Int3&, int);
template RunPlan checkRun<float, DefaultMemorySpace>(const ProcessGrid&, const TrainConfig&,
                                                     const SetListing&, const SetListing&);
template std::size_t largestRankBytesBeforeEngines<double, DefaultMemorySpace>(const TrainConfig&,
                                                                               const Int3&, int);
template RunPlan checkRun<double, DefaultMemorySpace>(const ProcessGrid&, const TrainConfig&,
                                                      const SetListing&, const SetListing&);

template RunPlan planRun<bfloat16, DefaultMemorySpace>(const TrainConfig&, const Int3&, int,
                                                       const SetListing&, const SetListing&);
template RunPlan planRun<float16, DefaultMemorySpace>(const TrainConfig&, const Int3&, int,
                                                      const SetListing&, const SetListing&);
template std::size_t largestRankBytesBeforeEngines<bfloat16, DefaultMemorySpace>(const TrainConfig&,
                                                                                 const Int3&, int);
template RunPlan checkRun<bfloat16, DefaultMemorySpace>(const ProcessGrid&, const TrainConfig&,
                                                        const SetListing&, const SetListing&);
template std::size_t largestRankBytesBeforeEngines<float16, DefaultMemorySpace>(const TrainConfig&,
                                                                                const Int3&, int);
template RunPlan checkRun<float16, DefaultMemorySpace>(const ProcessGrid&, const TrainConfig&,
                                                       const SetListing&, const SetListing&);

}  // namespace hybrid3d
