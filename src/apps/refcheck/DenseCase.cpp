// Reference-checker runners for the dense layers: "linear" (Dense on replicated [N, F]
// tensors, run alike on every rank) and "flatten_linear" (FlattenDense on a distributed
// [N, C, D, H, W] input). Any shapes.
//
// With G data-parallel groups the case's batch is the global mini-batch (overGroups in
// RefCase.hpp); every rank returns the worst error over all groups.
#include <type_traits>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/layers/Dense.hpp>
#include <hybrid3d/layers/FlattenDense.hpp>

#include "RefCase.hpp"

namespace hybrid3d::app::refcheck {
namespace {

using Exec = DefaultExecutionSpace;

// Runs samples [first, first + count) of the case on `grid`.
template <class Layer, class Input>
std::vector<Comparison> runDense(const RefCase& c, const ProcessGrid& grid, Layer& layer,
                                 const Input& x, const Input& dx, Index first, Index count) {
  const Exec exec;
  const auto params = layer.parameters();
  loadParameters(c, params);
  FeatureView<double> y("y", count, layer.outFeatures());
  layer.forward(exec, x, y);
  std::vector<Comparison> out{compareSamples(c, "output", y, first, count)};
  if (!c.has("grad_output")) return out;

  const FeatureView<double> dy = toFeatures(samples(c.tensor("grad_output"), first, count));
  layer.backward(exec, x, dy, dx);
  if (c.has("grad_input")) {
    if constexpr (std::is_same_v<Input, FeatureView<double>>)
      out.push_back(compareSamples(c, "grad_input", dx, first, count));
    else
      out.push_back(compareSamples(c, "grad_input", dx, grid, first, count));
  }
  compareGradients(c, params, grid, out);
  return out;
}

std::vector<Comparison> runLinear(const RefCase& c, const ProcessGrid& grid, Index first,
                                  Index count) {
  const std::vector<Index> w = c.shape("weight");
  const Index in = w.at(1);
  Dense<double> layer(grid, "linear", {int(count), int(in), {1, 1, 1}},
                      {int(w.at(0)), c.has("bias")});
  const FeatureView<double> x = toFeatures(samples(c.tensor("input"), first, count));
  const FeatureView<double> dx("dx", count, in);
  return runDense(c, grid, layer, x, dx, first, count);
}

std::vector<Comparison> runFlattenLinear(const RefCase& c, const ProcessGrid& grid, Index first,
                                         Index count) {
  const GlobalArray<double> input = samples(c.tensor("input"), first, count);
  const TensorShape shape = shapeOf(input);
  const std::vector<Index> w = c.shape("weight");
  FlattenDense<double> layer(grid, "flatten_linear", shape, {int(w.at(0)), c.has("bias"), w.at(1)});
  const BlockDecomposition& dec = layer.inputDecomposition();
  auto x = createDistTensor<double>("x", int(count), shape.channels, dec, grid.coords());
  auto dx = createDistTensor<double>("dx", int(count), shape.channels, dec, grid.coords());
  scatterFromGlobal(input, x);
  return runDense(c, grid, layer, x, dx, first, count);
}

const RefOp linearReg{"linear", groupedRunner<runLinear>};
const RefOp flattenLinearReg{"flatten_linear", groupedRunner<runFlattenLinear>};

}  // namespace
}  // namespace hybrid3d::app::refcheck
