#pragma once
/// \file
/// Floating-point operations of one rank's part of a layer, per pass (a multiply-add counts 2):
/// the arithmetic a roofline compares with the machine's peak, and what a performance model
/// multiplies by a measured rate. Counted from the owned output box, the work a rank must do
/// whatever the engine (an engine that computes more, e.g. on ghosts, is slower, not busier).
/// Only the layers that carry the FLOPs of our models count theirs (convolutions); the others
/// are memory-bound and report zero.

namespace hybrid3d {

struct LayerFlops {
  double forward = 0;
  double backwardData = 0;     // not run where the input is the model's data
  double backwardWeights = 0;  // weights and bias

  /// One training step: forward and both backward passes, or without backward-data.
  double step(bool dataGradient) const {
    return forward + backwardWeights + (dataGradient ? backwardData : 0);
  }
};

/// A convolution's passes from its multiply-adds per pass: forward and backward-data are the
/// same products in another order, backward-weights too.
inline LayerFlops convolutionFlops(double multiplyAdds, double biasAdds) {
  return {2 * multiplyAdds + biasAdds, 2 * multiplyAdds, 2 * multiplyAdds + biasAdds};
}

}  // namespace hybrid3d
