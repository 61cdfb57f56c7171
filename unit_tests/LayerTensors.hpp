#pragma once
// The four tensors of a layer's forward and backward on a process grid, filled from global
// arrays, and one forward and backward through them: the set-up the layer tests share (the
// convolution harness, the float-against-double, finite-difference and pooling tests).

#include <type_traits>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>

#include "Invariance.hpp"

namespace hybrid3d::test {

// x and dx have the layer's input decomposition and ghosts; y and dy its output decomposition
// and `outGhosts` (a following layer's ghosts: the layer must write and read only owned cells).
template <class Layer>
struct LayerTensors {
  using tensor_type = typename Layer::tensor_type;
  tensor_type x, y, dy, dx;
};

// The tensors of `layer` on `grid`, x and dy filled from this group's global arrays (converted
// to the layer's scalar), y and dx zero.
template <class Layer>
LayerTensors<Layer> layerTensors(const Layer& layer, const ProcessGrid& grid,
                                 const GlobalArray<double>& x, const GlobalArray<double>& dy,
                                 const GhostWidths& outGhosts = {}) {
  using T = typename Layer::tensor_type::value_type;
  using Space = typename Layer::tensor_type::memory_space;
  const TensorShape& in = layer.inputShape();
  const TensorShape& out = layer.outputShape();
  auto input = [&](const char* label) {
    return createDistTensor<T, Space>(label, in.batch, in.channels, layer.inputDecomposition(),
                                      grid.coords(), layer.inputGhosts());
  };
  auto output = [&](const char* label) {
    return createDistTensor<T, Space>(label, out.batch, out.channels, layer.outputDecomposition(),
                                      grid.coords(), outGhosts);
  };
  LayerTensors<Layer> t{input("x"), output("y"), output("dy"), input("dx")};
  scatterFromGlobal(convertGlobal<T>(x), t.x);
  scatterFromGlobal(convertGlobal<T>(dy), t.dy);
  return t;
}

// The output and input gradient of one forward and backward, as whole arrays in double.
struct ForwardBackward {
  GlobalArray<double> y, dx;
};

// Forward on x and backward with dy (global arrays of this group's samples) through the
// tensors of layerTensors; `layer` may be a temporary or a layer that keeps state between runs.
template <class Layer>
ForwardBackward forwardBackward(Layer&& layer, const ProcessGrid& grid,
                                const GlobalArray<double>& x, const GlobalArray<double>& dy,
                                const GhostWidths& outGhosts = {}) {
  const auto t = layerTensors(layer, grid, x, dy, outGhosts);
  const typename std::decay_t<Layer>::execution_space exec;
  layer.forward(exec, t.x, t.y);
  layer.backward(exec, t.x, t.dy, t.dx);
  return {convertGlobal<double>(gatherToGlobal(t.y, grid.spatialComm())),
          convertGlobal<double>(gatherToGlobal(t.dx, grid.spatialComm()))};
}

// got's output and input gradient equal want's to `tolerance` (max relative error).
inline void expectSameOutputAndGradient(const ForwardBackward& got, const ForwardBackward& want,
                                        double tolerance) {
  expectSameArray(got.y, want.y, tolerance, "output");
  expectSameArray(got.dx, want.dx, tolerance, "input gradient");
}

}  // namespace hybrid3d::test
