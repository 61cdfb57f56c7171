#pragma once
/// \file
/// The keys of a training deck (inputs/*.xml) and their translation into a TrainConfig.
/// `hybrid3d deck-help` prints this schema.

#include <string>
#include <vector>

#include <hybrid3d/core/Precision.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/deck/Deck.hpp>
#include <hybrid3d/generate/GenerateDataset.hpp>
#include <hybrid3d/train/TrainConfig.hpp>

namespace hybrid3d::deck {

const std::vector<DeckKey>& trainDeckSchema();

struct DeckRun {
  TrainConfig config;
  Int3 spatialGrid{1, 1, 1};
  bool generate = false;  // Data/Generate present: make the data first
  generate::GenerateOptions generation;
  Precision precision = Precision::Float;
};

/// Reads and validates DECK, resolves the grid for `worldSize` ranks ("auto" or DxHxW).
/// `needTrainData`: refuse a deck without 'Data/train' or 'Data/Generate' (false where the
/// samples come from elsewhere, as `hybrid3d gradients`'s command line).
DeckRun readTrainDeck(const std::string& path, int worldSize, bool needTrainData = true);

/// The same from the deck's text (a checkpoint's `deck` attribute, for `hybrid3d predict`);
/// `name` names it in messages. Data/train is not required, and the process grid is left to the
/// caller (spatialGrid stays 1x1x1).
DeckRun readTrainDeckText(const std::string& xml, const std::string& name);

/// The same from a deck already parsed; worldSize <= 0: the process grid is not resolved.
DeckRun readTrainDeck(const Deck& deck, const std::string& path, int worldSize, bool needTrainData);

}  // namespace hybrid3d::deck
