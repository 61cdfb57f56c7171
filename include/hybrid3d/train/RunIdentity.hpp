#pragma once
/// \file
/// A run's identity: what a checkpoint was trained as, stored in it (RunState::identity) and
/// compared on --restart. A change that alters what the continued run computes (architecture,
/// input width, precision, mini-batch, seed, training samples, optimizer, batch-norm statistics,
/// and the data-parallel groups when batch norm is per group) is refused with one line naming
/// the key and both values; a change that is safe (epochs, spatial grid, output directory,
/// learning rate, schedule, groups with global batch norm) is allowed and reported.

#include <map>
#include <string>
#include <vector>

#include <hybrid3d/core/Precision.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/train/Checkpoint.hpp>
#include <hybrid3d/train/TrainConfig.hpp>

namespace hybrid3d {

using RunIdentity = std::map<std::string, std::string>;

RunIdentity runIdentity(const TrainConfig& config, const ProcessGrid& grid, Precision precision,
                        long long trainingSamples);

/// Throws hybrid3d::Error naming `checkpoint`, the key and both values for the first refused
/// change (the same on every rank: both sides are replicated). Returns one line per allowed
/// change ("epochs 3 -> 5"), and says so when the checkpoint predates identities. The decks
/// themselves are compared key by key where decks are read (deck/RestartChanges.hpp); `deckNow`
/// is not used here.
std::vector<std::string> checkRestart(const std::string& checkpoint, const RunState& saved,
                                      const RunIdentity& now, const std::string& deckNow);

}  // namespace hybrid3d
