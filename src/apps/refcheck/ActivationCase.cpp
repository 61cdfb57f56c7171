// Reference-checker runners for the point-wise activations: "leaky_relu" (attribute `slope`)
// and "relu". Any NCDHW shape. Activations have no parameters and no communication, so with
// G > 1 every group simply runs the whole case (no overGroups).
#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/layers/Activation.hpp>

#include "RefCase.hpp"

namespace hybrid3d::app::refcheck {
namespace {

std::vector<Comparison> runPointwise(const RefCase& c, const ProcessGrid& grid,
                                     const LeakyReLUOp& op) {
  using Exec = DefaultExecutionSpace;
  const GlobalArray<double> input = c.tensor("input");
  const TensorShape shape = shapeOf(input);
  const int N = shape.batch, C = shape.channels;
  const LeakyReLU<double> layer(grid, c.op(), shape, op);
  const BlockDecomposition& dec = layer.inputDecomposition();
  auto x = createDistTensor<double>("x", N, C, dec, grid.coords());
  auto y = createDistTensor<double>("y", N, C, dec, grid.coords());
  scatterFromGlobal(input, x);
  const Exec exec;
  layer.forward(exec, x, y);

  std::vector<Comparison> out;
  if (c.has("output")) out.push_back(compareSamples(c, "output", y, grid, 0, N));
  if (c.has("grad_output") && c.has("grad_input")) {
    auto dy = createDistTensor<double>("dy", N, C, dec, grid.coords());
    auto dx = createDistTensor<double>("dx", N, C, dec, grid.coords());
    scatterFromGlobal(c.tensor("grad_output"), dy);
    layer.backward(exec, x, dy, dx);
    out.push_back(compareSamples(c, "grad_input", dx, grid, 0, N));
  }
  return out;
}

std::vector<Comparison> runLeakyReluCase(const RefCase& c, const ProcessGrid& grid) {
  return runPointwise(c, grid, LeakyReLUOp{c.number("slope")});
}

std::vector<Comparison> runReluCase(const RefCase& c, const ProcessGrid& grid) {
  return runPointwise(c, grid, reluOp());
}

const RefOp leakyReluReg{"leaky_relu", &runLeakyReluCase};
const RefOp reluReg{"relu", &runReluCase};

}  // namespace
}  // namespace hybrid3d::app::refcheck
