#pragma once
// The dry run behind `hybrid3d check DECK` and `hybrid3d train DECK --dry-run`: one code path.
// Checks the deck's run on the ranks at hand -- the configuration, the grid against every
// layer, the datasets' listings and every sample file's metadata -- without building the
// model, reading sample contents or writing anything, and prints the plan (plan/RunPlan.hpp)
// on world rank 0. Refuses what a real run would refuse, with the same one line.

#include <string>
#include <utility>

#include <hybrid3d/deck/TrainDeck.hpp>
#include <hybrid3d/plan/Machine.hpp>
#include <hybrid3d/plan/RunPlan.hpp>

namespace hybrid3d::app {

// Returns the exit status (0); throws an error agreed over the world otherwise. Also checks
// that every rank can create and write the output directory and that the plan's memory fits
// each node's (its ranks counted), or `memoryLimit` bytes per rank when > 0. `machine`: the
// fixed cost of a process comes from it (plan/RankMemory.hpp); without one it is unknown.
int dryRun(const std::string& deckPath, const deck::DeckRun& run, double memoryLimit = 0,
           const Machine* machine = nullptr);

// The deck's data as the dry run checks it, for a run of `groups` data-parallel groups: its
// sets listed and every sample file's metadata checked on the ranks of `world`, or, for a deck
// that generates its data and has not yet, the sets it will make, taken as listed.
// Collective; an error on any rank is thrown on every rank.
std::pair<SetListing, SetListing> checkDeckData(const deck::DeckRun& run, int groups,
                                                MPI_Comm world);

}  // namespace hybrid3d::app
