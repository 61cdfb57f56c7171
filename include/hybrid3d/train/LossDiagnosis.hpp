#pragma once
/// \file
/// Why a training loss went non-finite, found after the fact: the forward pass that produced it
/// left the model input and the parameters in place, and Graph::replayForward computes every
/// layer's output again as that pass did, so a pass over them (run only once the loss is found
/// non-finite, never in a normal step) names the first thing that is not finite, in the order
/// the step computes them: the input after preprocessing (and
/// which sample), the targets (which sample), a weight (which), a layer's output (which layer),
/// else the loss itself overflowed. The message also names the step and the batch's files, and
/// the previous step's loss and files (whose update made this step's weights).

#include <string>

#include <hybrid3d/data/Dataset.hpp>
#include <hybrid3d/data/HostBatch.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/model/Graph.hpp>

namespace hybrid3d {

template <class T, class M>
struct LossDiagnosisInputs {
  const ProcessGrid* grid = nullptr;
  Graph<T, M>* graph = nullptr;            // replayForward runs its forward again
  const data::HostBatch* batch = nullptr;  // this rank's part of the step's mini-batch
  const data::Dataset* dataset = nullptr;  // the training set (file names of batch.samples)
  /// The previous step's slots (HostBatch::samples) and loss; null or empty: none this run.
  const std::vector<Index>* previousSamples = nullptr;
  double previousLoss = 0;
  double loss = 0;
  long long step = 0;          // steps done before this one
  int epoch = 0;               // 0-based
  std::string restartFrom;     // the checkpoint the run started from ("" : none)
  long long restartStep = -1;  // its step
};

/// Collective over the world: the same one-line message on every rank.
template <class T, class M>
std::string diagnoseNonFiniteLoss(const LossDiagnosisInputs<T, M>& in);

}  // namespace hybrid3d
