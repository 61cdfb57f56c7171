#pragma once
/// \file
/// What every layer class template over (T, MemorySpace) shares, written once: its member types
/// (HYBRID3D_LAYER_TYPES), the test for a gradient nobody wants (Impl::wanted), and the backward
/// of a layer whose passes are independent (LayerBackward). model/Nodes.hpp relies on this
/// convention to drive every layer through one adapter.

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/SpaceTraits.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/kernels/FeatureView.hpp>

// The first line of a layer's public section: the space check, then the activations' scalar,
// the spaces, and the two kinds of tensor a layer reads and writes: volumes distributed over the
// spatial grid (tensor_type) and [N, F] matrices replicated over a spatial group (feature_type).
#define HYBRID3D_LAYER_TYPES(T, MemorySpace)                     \
  HYBRID3D_ASSERT_SPACE(MemorySpace);                            \
  using value_type = T;                                          \
  using memory_space = MemorySpace;                              \
  using execution_space = typename MemorySpace::execution_space; \
  using tensor_type = ::hybrid3d::DistTensor<T, MemorySpace>;    \
  using feature_type = ::hybrid3d::FeatureView<T, MemorySpace>

namespace hybrid3d {

/// How a layer's next forward runs (setForwardPass). Activation recomputation
/// (model/Recompute.hpp) runs some forwards again inside the backward pass, and such a replay
/// must write the bits the step's first forward wrote without changing the layer's state: batch
/// norm normalises with the statistics the first forward saved (no second reduction over the
/// ranks, no second update of the running statistics); dropout's mask is a function of the step
/// and the sample already.
enum class ForwardPass {
  First,      // the step's forward pass (or an evaluation's)
  Recompute,  // a replay whose input was computed again too: its ghosts are exchanged again
  /// A replay whose input was kept since the first forward, its memory shared with no other
  /// tensor meanwhile: its ghosts still hold what the first forward's halo gather wrote, so the
  /// layer exchanges none (the gather's arithmetic and parts stay the first forward's, so the
  /// bits do).
  RecomputeKeptInput
};

namespace Impl {

/// Whether a gradient is wanted: the model hands an empty dx (no storage) to the layer whose
/// input needs no gradient, the model's own input, and that layer skips backward-data.
template <class T, class M>
bool wanted(const DistTensor<T, M>& gradient) {
  return gradient.view().data() != nullptr;
}
template <class T, class M>
bool wanted(const FeatureView<T, M>& gradient) {
  return gradient.data() != nullptr;
}

}  // namespace Impl

/// backward(exec, x, dy, dx) of a layer from its two passes, as a base of the layer (CRTP):
/// Layer::backwardWeights(exec, x, dy), then Layer::backwardData(exec, dy, dx) where dx is
/// wanted. X is the input's tensor type (and dx's), DY the output's; the execution space is X's.
/// For layers whose passes share nothing: BatchNorm3d shares one pass over (x, dy) between
/// them and writes its own backward.
template <class Layer, class X, class DY = X>
class LayerBackward {
  using Exec = typename X::execution_space;

public:
  void backward(const Exec& exec, const X& x, const DY& dy, const X& dx) {
    run(static_cast<Layer&>(*this), exec, x, dy, dx);
  }
  /// For layers whose passes are const (Dense): instantiated only where called.
  void backward(const Exec& exec, const X& x, const DY& dy, const X& dx) const {
    run(static_cast<const Layer&>(*this), exec, x, dy, dx);
  }

private:
  template <class Self>
  static void run(Self& layer, const Exec& exec, const X& x, const DY& dy, const X& dx) {
    layer.backwardWeights(exec, x, dy);
    if (Impl::wanted(dx)) layer.backwardData(exec, dy, dx);
  }
};

}  // namespace hybrid3d
