#include "AutoRecompute.hpp"

#include <cstdio>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/plan/LayoutSearch.hpp>
#include <hybrid3d/plan/RankMemory.hpp>
#include <hybrid3d/plan/RecomputeChoice.hpp>

#include "DryRun.hpp"

namespace hybrid3d::app {

void resolveAutoRecompute(deck::DeckRun& r, const Machine* machine, double memoryLimit,
                          const char* command) {
  if (r.config.model.recompute.mode != RecomputeOption::Mode::Auto) return;
  int world = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  data::collectively(MPI_COMM_WORLD, [&] {
    if (!machine)
      fail(command,
           ": Model/recompute auto needs --machine FILE (the memory per rank and the step times "
           "it chooses by; `hybrid3d calibrate` writes one for this machine)");
  });
  const Int3& g = r.spatialGrid;
  const int groups = world / (g[0] * g[1] * g[2]);
  const std::pair<SetListing, SetListing> sets = checkDeckData(r, groups, MPI_COMM_WORLD);
  RecomputeOption chosen;
  const double limit = memoryLimit > 0 ? memoryLimit : machine->rank.memoryGiB * double(1 << 30);
  data::collectively(MPI_COMM_WORLD, [&] {
    TrainConfig none = r.config;
    none.model.recompute = {};
    RunPlan run = planRunIn(r.precision, none, g, groups, sets.first, sets.second);
    run.fixedMemoryBytes = fixedMemoryBytes(*machine);
    // All the rank holds, as the dry run compares it with the memory.
    chosen =
        resolveRecompute(run, *machine, memoryLimit, ioModelFor(r.config), MemoryCounted::Whole);
  });
  r.config.model.recompute = chosen;
  if (rank == 0) {
    std::printf(
        "hybrid3d: Model/recompute auto: %s (the least predicted step time within %.1f MiB per "
        "rank on machine %s)\n",
        chosen.ranges.empty() ? "none" : toString(chosen).c_str(), limit / double(1 << 20),
        machine->name.c_str());
    std::fflush(stdout);
  }
}

}  // namespace hybrid3d::app
