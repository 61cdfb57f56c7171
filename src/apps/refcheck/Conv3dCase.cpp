// Reference-checker runner for "conv3d" (Conv3d): any batch, channels, extents, odd cubic
// kernel, stride, padding, with or without bias; the layer is built from the shapes of `input`
// and `weight` [Cout, Cin, k, k, k] and the attributes kernel, stride, padding.
//
// With G data-parallel groups the case's batch is the global mini-batch: when G divides it,
// group g runs samples [g*N/G, (g+1)*N/G) and the parameter gradients are summed over the world,
// exactly as in training; otherwise every group runs the whole case on a grid of its own.
// Every rank returns the worst error over all groups.
#include <algorithm>

#include <mpi.h>

#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/layers/Conv3d.hpp>

#include "RefCase.hpp"

namespace hybrid3d::app::refcheck {
namespace {

using Layer = Conv3d<double>;

GlobalArray<double> samples(const GlobalArray<double>& a, Index first, Index count) {
  GlobalArray<double> s(a.label(), count, a.extent(1), a.extent(2), a.extent(3), a.extent(4));
  Kokkos::deep_copy(s, Kokkos::subview(a, Kokkos::pair<Index, Index>(first, first + count),
                                       Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL));
  return s;
}

int attribute(const RefCase& c, const char* name) {
  if (!c.hasNumber(name)) fail(c.path(), ": conv3d case lacks attribute '", name, "'");
  return static_cast<int>(c.number(name));
}

// Samples [first, first + count) of the case on `grid`.
std::vector<Comparison> run(const RefCase& c, const ProcessGrid& grid, Index first, Index count) {
  const GlobalArray<double> input = samples(c.tensor("input"), first, count);
  const std::vector<Index> w = c.shape("weight");
  const int k = attribute(c, "kernel");
  if (w.size() != 5 || w[1] != Index(input.extent(1)) || w[2] != k || w[3] != k || w[4] != k)
    fail(c.path(), ": conv3d weight shape does not match [Cout, ", input.extent(1), ", ", k, ", ",
         k, ", ", k, "]");
  Layer::Options o;
  o.outChannels = int(w[0]);
  o.kernel = k;
  o.stride = attribute(c, "stride");
  o.padding = attribute(c, "padding");
  o.bias = c.has("bias");
  const TensorShape shape{int(count), int(input.extent(1)),
                          {Index(input.extent(2)), Index(input.extent(3)), Index(input.extent(4))}};
  Layer layer(grid, "conv3d", shape, o);

  const auto params = layer.parameters();
  const char* names[2] = {"weight", "bias"};
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::vector<double> v = c.flat(names[i]);
    if (v.size() != params[i].value.size()) fail(c.path(), ": conv3d ", names[i], " size mismatch");
    auto h = Kokkos::create_mirror_view(params[i].value);
    std::copy(v.begin(), v.end(), h.data());
    Kokkos::deep_copy(params[i].value, h);
  }

  const DefaultExecutionSpace exec;
  const int cout = layer.outputShape().channels;
  auto x = createDistTensor<double>("input", int(count), shape.channels, layer.inputDecomposition(),
                                    grid.coords(), layer.inputGhosts());
  auto y = createDistTensor<double>("output", int(count), cout, layer.outputDecomposition(),
                                    grid.coords());
  scatterFromGlobal(input, x);
  layer.forward(exec, x, y);
  std::vector<Comparison> out{compare("output", gatherToGlobal(y, grid.spatialComm()),
                                      samples(c.tensor("output"), first, count))};
  if (!c.has("grad_output")) return out;

  auto dy = createDistTensor<double>("grad_output", int(count), cout, layer.outputDecomposition(),
                                     grid.coords());
  auto dx = createDistTensor<double>("grad_input", int(count), shape.channels,
                                     layer.inputDecomposition(), grid.coords(),
                                     layer.inputGhosts());
  scatterFromGlobal(samples(c.tensor("grad_output"), first, count), dy);
  layer.backward(exec, x, dy, dx);
  if (c.has("grad_input"))
    out.push_back(compare("grad_input", gatherToGlobal(dx, grid.spatialComm()),
                          samples(c.tensor("grad_input"), first, count)));
  const char* gradNames[2] = {"grad_weight", "grad_bias"};
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!c.has(gradNames[i])) continue;
    allreduceSum(params[i].grad, grid.worldComm());
    out.push_back(compare(gradNames[i],
                          Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), params[i].grad),
                          c.tensor(gradNames[i])));
  }
  return out;
}

std::vector<Comparison> runConv3dCase(const RefCase& c, const ProcessGrid& grid) {
  const Index N = c.shape("input").at(0);
  const int G = grid.numGroups();
  std::vector<Comparison> out;
  if (N % G == 0) {
    out = run(c, grid, grid.group() * (N / G), N / G);
  } else {
    const ProcessGrid own(grid.spatialComm(), grid.dims());
    out = run(c, own, 0, N);
  }
  for (Comparison& cmp : out)
    MPI_Allreduce(MPI_IN_PLACE, &cmp.maxRelError, 1, MPI_DOUBLE, MPI_MAX, grid.worldComm());
  return out;
}

const RefOp reg{"conv3d", &runConv3dCase};

}  // namespace
}  // namespace hybrid3d::app::refcheck
