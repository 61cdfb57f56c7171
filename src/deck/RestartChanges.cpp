#include <hybrid3d/deck/RestartChanges.hpp>

#include <algorithm>
#include <map>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/deck/TrainDeck.hpp>

namespace hybrid3d::deck {

const std::vector<std::string>& restartChangeableKeys() {
  // How long and where the run goes, how its ranks are laid out (checkpoints hold global
  // tensors, so any layout continues the same computation) and how fast it reads and
  // convolves; none of them changes a step's result.
  static const std::vector<std::string> keys = {
      "Training/epochs",
      "Training/max steps",
      "Training/print every",
      "Training/checkpoint every",
      "Training/checkpoint minutes",
      "Training/collective timeout",
      "Training/output directory",
      "Parallel/spatial grid",
      "Parallel/data-parallel groups",
      "Parallel/layer grids",
      "Parallel/minimum box width",
      "Data/read mode",
      "Data/prefetch",
      "Data/cache MiB",
      "Model/convolution workspace MiB",
      "Model/convolution engine",
      "Model/halo overlap",
      "Model/recompute",  // the same values and gradients, less memory
  };
  return keys;
}

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string shown(const std::map<std::string, std::string>& values, const std::string& key) {
  const auto it = values.find(key);
  return it == values.end() ? "(not set)" : "\"" + it->second + "\"";
}

}  // namespace

RestartChanges checkRestartDeck(const std::string& checkpoint, const RunState& saved,
                                const std::string& deckPath, const std::string& deckNow,
                                const std::vector<std::string>& allowed) {
  std::map<std::string, bool> schemaKeys;
  for (const DeckKey& k : trainDeckSchema()) schemaKeys[k.path] = true;
  for (const std::string& key : allowed)
    if (!schemaKeys.count(key))
      fail("--allow-change ", key, ": no such deck key (hybrid3d deck-help lists them)");
  RestartChanges out;
  out.history = saved.history;
  if (saved.deck.empty()) {
    out.notes.push_back(checkpoint + " stores no deck: only its run identity is compared");
    return out;
  }
  std::map<std::string, std::string> was;
  try {
    was = Deck::fromString(saved.deck, trainDeckSchema(), checkpoint + "'s deck").values();
  } catch (const Error& e) {
    out.notes.push_back(std::string("the deck stored in ") + checkpoint +
                        " cannot be compared key by key (" + e.what() +
                        "): only its run identity is compared");
    return out;
  }
  const std::map<std::string, std::string> now =
      Deck::fromString(deckNow, trainDeckSchema(), deckPath).values();
  std::vector<std::string> keys;
  for (const auto& kv : was) keys.push_back(kv.first);
  for (const auto& kv : now)
    if (!was.count(kv.first)) keys.push_back(kv.first);
  std::sort(keys.begin(), keys.end());
  std::string refused;
  for (const std::string& key : keys) {
    const std::string a = shown(was, key), b = shown(now, key);
    if (a == b) continue;
    const std::string change = "'" + key + "' " + a + " -> " + b;
    const bool free = contains(restartChangeableKeys(), key);
    if (!free && !contains(allowed, key)) {
      refused += (refused.empty() ? "" : ", ") + change;
      continue;
    }
    out.notes.push_back(change + (free ? "" : " (--allow-change)"));
    out.history += "restart at step " + std::to_string(saved.step) + ": " + change +
                   (free ? "" : " (--allow-change)") + "\n";
  }
  if (!refused.empty())
    fail("restart from ", checkpoint, " would change what the run computes: ", refused,
         "; restore the checkpoint's values, allow each change with --allow-change KEY, or start "
         "afresh");
  return out;
}

}  // namespace hybrid3d::deck
