#pragma once
/// \file
/// What a restart changes in the deck, key by key: the checkpoint stores the deck its run was
/// started from, and both decks are read with the schema (defaults filled in), so "1" and
/// "true", or a key given at its default, are no change. A few keys change how a run goes, not
/// what it computes, and may change freely (restartChangeableKeys: epochs and step limits,
/// cadences, the output directory, the layout of the ranks, the speed-only knobs); any other
/// change is refused, naming every changed key with both values, unless each is allowed by
/// name (--allow-change KEY). Every change, free or allowed, is appended to the checkpoint's
/// history (RunState::history), so a checkpoint says how its run came to be.

#include <string>
#include <vector>

#include <hybrid3d/train/Checkpoint.hpp>

namespace hybrid3d::deck {

const std::vector<std::string>& restartChangeableKeys();

struct RestartChanges {
  std::string history;             // the checkpoint's history with this restart's lines
  std::vector<std::string> notes;  // one line per change, for the user
};

/// Throws hybrid3d::Error (one line naming `checkpoint`, every refused key and both values) when
/// the deck `deckNow` (read from `deckPath`) changes a key that is neither changeable nor in
/// `allowed`; an `allowed` key outside the schema is refused too. A checkpoint without a stored
/// deck (or one this schema cannot read) is compared by its run identity alone (a note says so).
RestartChanges checkRestartDeck(const std::string& checkpoint, const RunState& saved,
                                const std::string& deckPath, const std::string& deckNow,
                                const std::vector<std::string>& allowed);

}  // namespace hybrid3d::deck
