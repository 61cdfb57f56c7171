#pragma once
// Layer timings for a machine file (plan/Machine.hpp's LayerTiming): every layer of a deck's
// model, forward + backward of one training step, measured with every rank of the world
// training its own copy of the model at once (each alone on a 1x1x1 grid, MPI_COMM_SELF), as
// the ranks of a training run share the node's memory bandwidth and caches.

#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/deck/TrainDeck.hpp>
#include <hybrid3d/plan/Machine.hpp>

namespace hybrid3d::app::calibrate {

// One layer measured at one size.
struct LayerPoint {
  std::string key;                         // layerKey(run, id, {0, 0, 0}) (plan/StepCost.hpp)
  std::string layer;                       // its name in the model, for the report
  std::string kind;                        // "Conv3d", "AvgPool3d", ...
  Precision precision = Precision::Float;  // the deck's
  double voxels = 0;                       // countStep's work: batch (1) x output voxels
  double flops = 0;                        // countStep's FLOPs of the step
  double seconds = 0;                      // the median over the timed steps of every rank
};

// The deck's model (its options and precision) at input width `size`, local batch 1: one
// warm-up and `steps` timed training steps (forward, loss, backward, optimizer update) on
// synthetic inputs; each node's time is its forward and backward Kokkos regions'
// (core/RegionTimes.hpp). One point per layer, the same on every rank. Collective over `world`.
std::vector<LayerPoint> timeLayers(MPI_Comm world, const deck::DeckRun& deck, int size, int steps);

// Plans the deck's model at input width `size` as timeLayers runs it: throws the one line a
// size the model cannot take gets, before anything is measured.
void checkSize(const deck::DeckRun& deck, int size);

// One timing per key, its points sorted by voxels; points of one key with the same voxels (the
// same layer shape met in two decks) keep the median of their seconds.
std::vector<LayerTiming> mergeTimings(const std::vector<LayerPoint>& points);

}  // namespace hybrid3d::app::calibrate
