// Reference-checker runners for the point-wise activations: "leaky_relu" (attribute `slope`)
// and "relu". Any NCDHW shape. Activations have no parameters and no communication, so with
// G > 1 every group simply runs the whole case.
#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/layers/Activation.hpp>

#include "RefCase.hpp"

namespace hybrid3d::app::refcheck {
namespace {

std::vector<Comparison> runPointwise(const RefCase& c, const ProcessGrid& grid,
                                     const LeakyReLUOp& op) {
  using Exec = DefaultExecutionSpace;
  const GlobalArray<double> input = c.tensor("input");
  const int N = int(input.extent(0)), C = int(input.extent(1));
  const Index3 e{Index(input.extent(2)), Index(input.extent(3)), Index(input.extent(4))};
  const LeakyReLU<double> layer(grid, c.op(), {N, C, e}, op);
  const BlockDecomposition& dec = layer.inputDecomposition();
  auto x = createDistTensor<double>("x", N, C, dec, grid.coords());
  auto y = createDistTensor<double>("y", N, C, dec, grid.coords());
  scatterFromGlobal(input, x);
  const Exec exec;
  layer.forward(exec, x, y);

  std::vector<Comparison> out;
  if (c.has("output")) out.push_back(compare("output", gatherToGlobal(y, grid.spatialComm()),
                                             c.tensor("output")));
  if (c.has("grad_output") && c.has("grad_input")) {
    auto dy = createDistTensor<double>("dy", N, C, dec, grid.coords());
    auto dx = createDistTensor<double>("dx", N, C, dec, grid.coords());
    scatterFromGlobal(c.tensor("grad_output"), dy);
    layer.backward(exec, x, dy, dx);
    out.push_back(compare("grad_input", gatherToGlobal(dx, grid.spatialComm()),
                          c.tensor("grad_input")));
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
