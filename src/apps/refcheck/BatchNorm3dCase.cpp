// Reference-checker runner for "batch_norm3d": builds BatchNorm3d (global statistics, so the
// result equals single-process PyTorch on the case's whole batch) from the input shape and the
// attributes momentum (default 0.1), eps (1e-5) and training (1), with weight and bias when the
// case has them (affine) and running statistics from datasets running_mean / running_var when
// present, else PyTorch's (0, 1). Runs forward and, with grad_output, backward in double on the
// given grid and compares output, grad_input, grad_weight, grad_bias, running_mean_after and
// running_var_after, whichever the case holds. With G data-parallel groups, group g runs
// samples [g*N/G, (g+1)*N/G) of the case's N (the statistics still cover all N), or all N on a
// grid of its own when G does not divide N (overGroups in RefCase.hpp).

#include <string>
#include <vector>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/layers/BatchNorm3d.hpp>

#include "RefCase.hpp"

namespace hybrid3d::app::refcheck {
namespace {

using Layer = BatchNorm3d<double>;

// Samples [first, first + count) of the case on `grid`.
std::vector<Comparison> runBatchNorm3d(const RefCase& c, const ProcessGrid& grid, Index first,
                                       Index count) {
  const GlobalArray<double> x = samples(c.tensor("input"), first, count);
  const TensorShape shape = shapeOf(x);
  Layer::Options o;
  if (c.hasNumber("momentum")) o.momentum = c.number("momentum");
  if (c.hasNumber("eps")) o.eps = c.number("eps");
  o.affine = c.has("weight") || c.has("bias");
  Layer layer(grid, c.op(), shape, o);
  layer.setTraining(!c.hasNumber("training") || c.number("training") != 0);
  loadParameters(c, layer.parameters());  // "weight", "bias"
  const auto buffers = layer.buffers();   // running_mean, running_var
  for (const auto& b : buffers)
    if (c.has(b.name)) load(c, b.name, b.value);

  auto make = [&](const char* label) {
    return createDistTensor<double>(label, shape.batch, shape.channels, layer.inputDecomposition(),
                                    grid.coords());
  };
  auto xt = make("input");
  auto yt = make("output");
  scatterFromGlobal(x, xt);
  Layer::execution_space exec;
  layer.forward(exec, xt, yt);

  std::vector<Comparison> result;
  if (c.has("output")) result.push_back(compareWholeBatch(c, "output", yt, grid));
  for (const auto& b : buffers)
    if (c.has(b.name + "_after")) result.push_back(compareVector(c, b.name + "_after", b.value));
  if (c.has("grad_output")) {
    auto dy = make("grad_output");
    auto dx = make("grad_input");
    scatterFromGlobal(samples(c.tensor("grad_output"), first, count), dy);
    layer.backward(exec, xt, dy, dx);
    if (c.has("grad_input")) result.push_back(compareWholeBatch(c, "grad_input", dx, grid));
    compareGradients(c, layer.parameters(), grid, result);
  }
  return result;
}

const RefOp batchNormReg{"batch_norm3d", groupedRunner<runBatchNorm3d>};

}  // namespace
}  // namespace hybrid3d::app::refcheck
