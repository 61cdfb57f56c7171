#include "DryRun.hpp"

#include <cstdio>
#include <filesystem>

#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/generate/GenerateDataset.hpp>
#include <hybrid3d/model/Recompute.hpp>
#include <hybrid3d/train/ResourceChecks.hpp>
#include <hybrid3d/train/RunChecks.hpp>
#include <hybrid3d/plan/RankMemory.hpp>
#include <hybrid3d/plan/RunPlan.hpp>

#include "../PlanText.hpp"

namespace hybrid3d::app {

namespace {

// A deck that generates its data before training, when the data are not there yet: the sets
// it will make, taken as listed (the dry run generates nothing). Empty listings otherwise.
std::pair<SetListing, SetListing> toBeGenerated(const deck::DeckRun& r, MPI_Comm world) {
  int rank, have = 1;
  MPI_Comm_rank(world, &rank);
  // A dataset there made with other settings is refused, as training refuses it.
  data::collectively(world, [&] {
    if (r.generate && rank == 0) have = generate::existingDatasetMatches(r.generation);
  });
  MPI_Bcast(&have, 1, MPI_INT, 0, world);
  if (have) return {};
  const auto& g = r.generation;
  const std::string train = g.outDir + "/train", validation = g.outDir + "/validation";
  if (r.config.data.train != train) return {};  // Data/train names other samples: list them
  return {{train + " (to be generated)", g.train},
          {validation + " (to be generated)",
           r.config.data.validation == validation ? g.validation : 0}};
}

template <class T>
RunPlan check(const ProcessGrid& grid, const deck::DeckRun& r) {
  // A pair, not a structured binding: C++17 lambdas cannot capture one (clang rejects it).
  const std::pair<SetListing, SetListing> sets = toBeGenerated(r, grid.worldComm());
  RunPlan plan;
  data::collectively(grid.worldComm(),
                     [&] { plan = checkRun<T>(grid, r.config, sets.first, sets.second); });
  return plan;
}

}  // namespace

std::pair<SetListing, SetListing> checkDeckData(const deck::DeckRun& r, int groups,
                                                MPI_Comm world) {
  const std::pair<SetListing, SetListing> generated = toBeGenerated(r, world);
  std::pair<SetListing, SetListing> sets;
  data::collectively(world, [&] {
    const ModelOptions o = groupModelOptions(r.config, groups);
    const int S = o.inputWidth;
    sets =
        checkDatasets(world, r.config, groups, sampleSpec(modelTraits(o), {S, S, S}, r.config.data),
                      generated.first, generated.second);
  });
  return sets;
}

int dryRun(const std::string& deckPath, const deck::DeckRun& r, double memoryLimit,
           const Machine* machine) {
  const ProcessGrid grid(MPI_COMM_WORLD, r.spatialGrid);
  // Host memory holds the model only where the default memory space is the host's.
  constexpr bool hostMemory =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, DefaultMemorySpace>::accessible;
  // The memory without the engines' workspaces first: a run too large for the node is refused
  // before any engine is asked about its boxes (no vendor library sees a shape that large).
  if (hostMemory) {
    std::size_t before = 0;
    data::collectively(grid.worldComm(), [&] {
      before = withPrecision(r.precision, [&](auto tag) {
        return largestRankBytesBeforeEngines<typename decltype(tag)::type>(r.config, grid.dims(),
                                                                           grid.numGroups());
      });
    });
    checkNodeMemory(grid.worldComm(), double(before), memoryLimit, /*beforeWorkspaces=*/true);
  }
  RunPlan plan = withPrecision(
      r.precision, [&](auto tag) { return check<typename decltype(tag)::type>(grid, r); });
  if (machine) plan.fixedMemoryBytes = fixedMemoryBytes(*machine);
  checkOutputWritable(grid.worldComm(), r.config.outputDir);
  if (hostMemory) {
    const int largest = plan.largestRank();
    const Int3 coords = grid.coordsOf(largest);
    checkNodeMemory(grid.worldComm(), double(rankMemory(plan, coords).total()), memoryLimit);
  }
  if (grid.worldRank() == 0) {
    // What a step recomputes (model/Recompute.hpp); the memory plan below holds it.
    const RecomputeOption& recompute = r.config.model.recompute;
    const std::string recomputed =
        recompute.mode == RecomputeOption::Mode::None
            ? ""
            : "hybrid3d: recompute (Model/recompute = " + toString(recompute) + "): " +
                  describeRecompute(plan.model.stepGraph(), plan.model.recomputeSegments()) + "\n";
    std::printf(
        "hybrid3d: dry run of %s: the deck, the grid and the data check out\n%s%s"
        "hybrid3d: no sample contents read, nothing written; train with: mpirun -n %d "
        "hybrid3d train %s\n",
        deckPath.c_str(), recomputed.c_str(), planText(plan).c_str(), plan.world, deckPath.c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace hybrid3d::app
