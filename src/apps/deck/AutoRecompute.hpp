#pragma once
// Model/recompute = auto for `check` and `train`: the deck's run planned on the ranks at hand
// without recomputation, then the segments that fit the memory limit at the least predicted
// step time (plan/RecomputeChoice.hpp) on the machine file given, set as ranges in the deck's
// options before any model is built; world rank 0 prints the choice. Any other value is left
// as it is.

#include <hybrid3d/deck/TrainDeck.hpp>
#include <hybrid3d/plan/Machine.hpp>

namespace hybrid3d::app {

// `memoryLimit` bytes per rank, 0: the machine file's memory per rank. Collective; refuses with
// one line on every rank without a machine file, and where not even `all` fits.
void resolveAutoRecompute(deck::DeckRun& run, const Machine* machine, double memoryLimit,
                          const char* command);

}  // namespace hybrid3d::app
