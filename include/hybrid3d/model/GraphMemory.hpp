#pragma once
/// \file
/// What one rank's model holds, by kind, as the graph predicts it from the sizes it allocates:
/// bench_train_step prints it beside the allocator's count and the peak RSS, so that where the
/// memory of a rank goes is a figure, not a guess. Activations and their gradients carry their
/// ghost cells; parameters count what this rank holds (values and gradients): the whole of a
/// replicated one, this rank's columns of a column shard (layers/Parameter.hpp).

#include <cstddef>

namespace hybrid3d {

struct GraphMemory {
  /// Every node's output and the model input; in inference (Graph::finalize(true)) the arena
  /// they are placed in by their lives over the forward pass, and what they would hold each on
  /// its own (equal in training, where backward reads them all).
  std::size_t activations = 0;
  std::size_t activationBuffers = 0;
  /// One per consumer edge, plus dL/d(output): the arena they are placed in by their lives
  /// (model/GradientPlacement.hpp), and what they would hold each on its own.
  std::size_t activationGradients = 0;
  std::size_t activationGradientBuffers = 0;
  std::size_t parameters = 0;  // values and gradients
  std::size_t workspace = 0;   // the vendor convolutions' shared host workspace
  std::size_t buffers = 0;     // redistributions' send and receive buffers (and their staging)

  std::size_t total() const {
    return activations + activationGradients + parameters + workspace + buffers;
  }
};

}  // namespace hybrid3d
