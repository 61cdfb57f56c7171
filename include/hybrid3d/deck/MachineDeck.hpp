#pragma once
/// \file
/// Machine files (inputs/machines/*.xml, or what `hybrid3d calibrate` measures): a Teuchos XML
/// list read into a hybrid3d::Machine (plan/Machine.hpp), every key validated like a training
/// deck's (Deck.hpp): an unknown key, a value of the wrong type, a missing value, a rate that is
/// not positive, an efficiency outside (0, 1], an unknown allreduce algorithm, or a layer timing
/// whose arrays differ in length or whose sizes do not increase stops the reader with one line
/// naming the file and the key.
///
///      <ParameterList name="hybrid3d machine">
///        name, about; Rank/...; Network/...; File system/...;
///        Layer timings/<i>/{layer, voxels, seconds}   (optional, one sublist per layer key)
///      </ParameterList>
///
/// The layer timings' sublists may be named anything (the writer numbers them 0, 1, ...); their
/// order is kept.

#include <map>
#include <string>
#include <vector>

#include <hybrid3d/deck/Deck.hpp>
#include <hybrid3d/plan/Machine.hpp>

namespace hybrid3d::deck {

/// Every key but the layer timings' (whose sublists vary in number and name).
const std::vector<DeckKey>& machineDeckSchema();

Machine readMachineDeck(const std::string& path);
/// The same from text; `name` stands for the file in messages.
Machine readMachineDeckString(const std::string& xml, const std::string& name);

/// Writes `machine` to `path` in the format readMachineDeck reads, atomically (a temporary file
/// beside it, flushed, then renamed over it: a crash leaves the old file or the new one).
/// `headerComment` (any number of lines) becomes the XML comment the file begins with; `notes`
/// put a comment beside a key ("Network/inter-node GB/s" -> where that figure comes from). XML
/// forbids "--" inside a comment: it is written "- -". Throws hybrid3d::Error naming `path`.
void writeMachineDeck(const Machine& machine, const std::string& path,
                      const std::string& headerComment,
                      const std::map<std::string, std::string>& notes = {});

/// The file's text, as writeMachineDeck writes it.
std::string machineDeckText(const Machine& machine, const std::string& headerComment,
                            const std::map<std::string, std::string>& notes = {});

}  // namespace hybrid3d::deck
