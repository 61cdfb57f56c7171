// Reference-checker runners for the convolutions: "conv3d" (Conv3d: any batch, channels,
// extents, odd cubic kernel, stride, padding; weight [Cout, Cin, k, k, k]) and
// "conv_transpose3d" (ConvTranspose3d: kernel == stride with padding 0; weight
// [Cin, Cout, k, k, k]), with or without bias. The layer is built from the shapes of `input`
// and `weight` and the attributes kernel, stride, padding.
//
// With G data-parallel groups the case's batch is the global mini-batch (overGroups in
// RefCase.hpp); every rank returns the worst error over all groups.
#include <string>
#include <vector>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/layers/Conv3d.hpp>
#include <hybrid3d/layers/ConvTranspose3d.hpp>

#include "RefCase.hpp"

namespace hybrid3d::app::refcheck {
namespace {

// Samples [first, first + count) of a convolution case on `grid`. The layer is built from the
// shape of `input`, the attributes kernel, stride and padding, and `weight` [.., .., k, k, k]
// whose axis `coutAxis` holds the output channels and the other of its first two axes the
// input's (Conv3d: [Cout, Cin, k, k, k], coutAxis 0; ConvTranspose3d: [Cin, Cout, ...], 1),
// with a bias when the case holds one. Loads the parameters, runs forward and, when the case
// holds grad_output, backward, and compares output, grad_input and the parameter gradients,
// whichever the case holds (output always).
template <class Layer>
std::vector<Comparison> runConvolution(const RefCase& c, const ProcessGrid& grid, Index first,
                                       Index count, int coutAxis) {
  const GlobalArray<double> input = samples(c.tensor("input"), first, count);
  const TensorShape shape = shapeOf(input);
  const std::vector<Index> w = c.shape("weight");
  const int k = intAttribute(c, "kernel");
  if (w.size() != 5 || w[1 - coutAxis] != shape.channels || w[2] != k || w[3] != k || w[4] != k)
    fail(c.path(), ": ", c.op(), " weight shape does not match [", coutAxis == 0 ? "Cout, " : "",
         shape.channels, coutAxis == 1 ? ", Cout" : "", ", ", k, ", ", k, ", ", k, "]");
  typename Layer::Options o;
  o.outChannels = int(w[coutAxis]);
  o.kernel = k;
  o.stride = intAttribute(c, "stride");
  o.padding = intAttribute(c, "padding");
  o.bias = c.has("bias");
  Layer layer(grid, c.op(), shape, o);
  const auto params = layer.parameters();
  loadParameters(c, params);

  const typename Layer::execution_space exec;
  const int cout = layer.outputShape().channels;
  auto x = createDistTensor<double>("input", int(count), shape.channels, layer.inputDecomposition(),
                                    grid.coords(), layer.inputGhosts());
  auto y = createDistTensor<double>("output", int(count), cout, layer.outputDecomposition(),
                                    grid.coords());
  scatterFromGlobal(input, x);
  layer.forward(exec, x, y);
  std::vector<Comparison> out{compareSamples(c, "output", y, grid, first, count)};
  if (!c.has("grad_output")) return out;

  auto dy = createDistTensor<double>("grad_output", int(count), cout, layer.outputDecomposition(),
                                     grid.coords());
  auto dx =
      createDistTensor<double>("grad_input", int(count), shape.channels, layer.inputDecomposition(),
                               grid.coords(), layer.inputGhosts());
  scatterFromGlobal(samples(c.tensor("grad_output"), first, count), dy);
  layer.backward(exec, x, dy, dx);
  if (c.has("grad_input")) out.push_back(compareSamples(c, "grad_input", dx, grid, first, count));
  compareGradients(c, params, grid, out);
  return out;
}

std::vector<Comparison> runConv3d(const RefCase& c, const ProcessGrid& grid, Index first,
                                  Index count) {
  return runConvolution<Conv3d<double>>(c, grid, first, count, /*coutAxis=*/0);
}

std::vector<Comparison> runConvTranspose3d(const RefCase& c, const ProcessGrid& grid, Index first,
                                           Index count) {
  return runConvolution<ConvTranspose3d<double>>(c, grid, first, count, /*coutAxis=*/1);
}

const RefOp conv3dReg{"conv3d", groupedRunner<runConv3d>};
const RefOp convTranspose3dReg{"conv_transpose3d", groupedRunner<runConvTranspose3d>};

}  // namespace
}  // namespace hybrid3d::app::refcheck
