// Reference-checker runners for "max_pool3d" and "avg_pool3d": build the pooling layer from the
// case's input shape and attributes (kernel; stride, default the kernel as in PyTorch; padding,
// default 0; count_include_pad for average pooling, default 1), run forward and backward in
// double on the given grid, and compare output and grad_input over the whole batch. With G
// data-parallel groups, group g runs samples [g*N/G, (g+1)*N/G) of the case's N, or all N on a
// grid of its own when G does not divide N (overGroups in RefCase.hpp).

#include <string>
#include <vector>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/layers/AvgPool3d.hpp>
#include <hybrid3d/layers/MaxPool3d.hpp>

#include "RefCase.hpp"

namespace hybrid3d::app::refcheck {
namespace {

// Samples [first, first + count) of the case on `grid`.
template <class Layer>
std::vector<Comparison> runPool(const RefCase& c, const ProcessGrid& grid, Index first, Index count,
                                const typename Layer::Options& options) {
  const GlobalArray<double> x = samples(c.tensor("input"), first, count);
  const TensorShape shape = shapeOf(x);
  Layer layer(grid, c.op(), shape, options);
  const TensorShape& out = layer.outputShape();
  auto make = [&](const char* label, const TensorShape& s, const BlockDecomposition& dec,
                  const GhostMap& g) {
    return createDistTensor<double>(label, s.batch, s.channels, dec, grid.coords(), g);
  };
  auto xt = make("input", shape, layer.inputDecomposition(), layer.inputGhosts());
  auto yt = make("output", out, layer.outputDecomposition(), {});
  scatterFromGlobal(x, xt);
  typename Layer::execution_space exec;
  layer.forward(exec, xt, yt);

  std::vector<Comparison> result;
  if (c.has("output")) result.push_back(compareWholeBatch(c, "output", yt, grid));
  if (c.has("grad_output") && c.has("grad_input")) {
    auto dy = make("grad_output", out, layer.outputDecomposition(), {});
    auto dx = make("grad_input", shape, layer.inputDecomposition(), layer.inputGhosts());
    scatterFromGlobal(samples(c.tensor("grad_output"), first, count), dy);
    layer.backward(exec, xt, dy, dx);
    result.push_back(compareWholeBatch(c, "grad_input", dx, grid));
  }
  return result;
}

// The window of either pool: kernel; stride, default the kernel as in PyTorch; padding, default 0.
template <class Options>
Options windowOptions(const RefCase& c) {
  Options o;
  o.kernel = intAttribute(c, "kernel", o.kernel);
  o.stride = intAttribute(c, "stride", o.kernel);
  o.padding = intAttribute(c, "padding", 0);
  return o;
}

std::vector<Comparison> runMaxPool3d(const RefCase& c, const ProcessGrid& grid, Index first,
                                     Index count) {
  using Layer = MaxPool3d<double>;
  return runPool<Layer>(c, grid, first, count, windowOptions<Layer::Options>(c));
}

std::vector<Comparison> runAvgPool3d(const RefCase& c, const ProcessGrid& grid, Index first,
                                     Index count) {
  using Layer = AvgPool3d<double>;
  auto o = windowOptions<Layer::Options>(c);
  o.countIncludePad = intAttribute(c, "count_include_pad", 1) != 0;
  return runPool<Layer>(c, grid, first, count, o);
}

const RefOp maxPoolReg{"max_pool3d", groupedRunner<runMaxPool3d>};
const RefOp avgPoolReg{"avg_pool3d", groupedRunner<runAvgPool3d>};

}  // namespace
}  // namespace hybrid3d::app::refcheck
