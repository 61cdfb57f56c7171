// Reference-checker runners for "max_pool3d" and "avg_pool3d": build the pooling layer from the
// case's input shape and attributes (kernel; stride, default the kernel as in PyTorch; padding,
// default 0; count_include_pad for average pooling, default 1), run forward and backward in
// double on the given grid, and compare output and grad_input. With G data-parallel groups,
// group g runs samples [g*N/G, (g+1)*N/G) of the case's N, or all N on a grid of its own when
// G does not divide N.

#include <climits>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/layers/AvgPool3d.hpp>
#include <hybrid3d/layers/MaxPool3d.hpp>

#include "RefCase.hpp"

namespace hybrid3d::app::refcheck {
namespace {

int intAttribute(const RefCase& c, const std::string& name, int fallback) {
  return c.hasNumber(name) ? static_cast<int>(c.number(name)) : fallback;
}

// This group's samples of a whole-batch array.
GlobalArray<double> groupSamples(const GlobalArray<double>& a, const ProcessGrid& grid) {
  const Index n = a.extent(0) / grid.numGroups();
  GlobalArray<double> mine(a.label(), n, a.extent(1), a.extent(2), a.extent(3), a.extent(4));
  const Kokkos::pair<Index, Index> range(grid.group() * n, grid.group() * n + n);
  Kokkos::deep_copy(mine, Kokkos::subview(a, range, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL,
                                          Kokkos::ALL));
  return mine;
}

// Runs the case on `grid` with each group on its share of the batch when the batch splits over
// the groups, else each group on the whole batch on a grid of its own; the worst errors are
// then the same on every rank.
std::vector<Comparison> onEveryGroup(const RefCase& c, const ProcessGrid& grid,
                                     std::vector<Comparison> (*run)(const RefCase&,
                                                                    const ProcessGrid&)) {
  std::vector<Comparison> out;
  if (c.shape("input").at(0) % grid.numGroups() == 0) {
    out = run(c, grid);
  } else {
    const ProcessGrid own(grid.spatialComm(), grid.dims());
    out = run(c, own);
  }
  for (Comparison& cmp : out)
    MPI_Allreduce(MPI_IN_PLACE, &cmp.maxRelError, 1, MPI_DOUBLE, MPI_MAX, grid.worldComm());
  return out;
}

// The whole batch from every group's samples (each group holds its own after gatherToGlobal).
GlobalArray<double> wholeBatch(const GlobalArray<double>& mine, const ProcessGrid& grid) {
  const Index n = mine.extent(0);
  GlobalArray<double> all(mine.label(), n * grid.numGroups(), mine.extent(1), mine.extent(2),
                          mine.extent(3), mine.extent(4));
  const Kokkos::pair<Index, Index> range(grid.group() * n, grid.group() * n + n);
  Kokkos::deep_copy(
      Kokkos::subview(all, range, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL), mine);
  if (all.size() > static_cast<std::size_t>(INT_MAX))
    fail("refcheck: array '", mine.label(), "' too large");
  MPI_Allreduce(MPI_IN_PLACE, all.data(), static_cast<int>(all.size()), MPI_DOUBLE, MPI_SUM,
                grid.dataComm());
  return all;
}

template <class Layer>
std::vector<Comparison> runPool(const RefCase& c, const ProcessGrid& grid,
                                const typename Layer::Options& options) {
  const GlobalArray<double> x = groupSamples(c.tensor("input"), grid);
  const TensorShape shape{static_cast<int>(x.extent(0)), static_cast<int>(x.extent(1)),
                          {Index(x.extent(2)), Index(x.extent(3)), Index(x.extent(4))}};
  Layer layer(grid, c.op(), shape, options);
  const TensorShape& out = layer.outputShape();
  auto make = [&](const char* label, const TensorShape& s, const BlockDecomposition& dec,
                  const GhostWidths& g) {
    return createDistTensor<double>(label, s.batch, s.channels, dec, grid.coords(), g);
  };
  auto xt = make("input", shape, layer.inputDecomposition(), layer.inputGhosts());
  auto yt = make("output", out, layer.outputDecomposition(), {});
  scatterFromGlobal(x, xt);
  typename Layer::execution_space exec;
  layer.forward(exec, xt, yt);

  std::vector<Comparison> result;
  auto whole = [&](const DistTensor<double>& t) {
    return wholeBatch(gatherToGlobal(t, grid.spatialComm()), grid);
  };
  if (c.has("output")) result.push_back(compare("output", whole(yt), c.tensor("output")));
  if (c.has("grad_output") && c.has("grad_input")) {
    auto dy = make("grad_output", out, layer.outputDecomposition(), {});
    auto dx = make("grad_input", shape, layer.inputDecomposition(), layer.inputGhosts());
    scatterFromGlobal(groupSamples(c.tensor("grad_output"), grid), dy);
    layer.backward(exec, xt, dy, dx);
    result.push_back(compare("grad_input", whole(dx), c.tensor("grad_input")));
  }
  return result;
}

std::vector<Comparison> runMaxPool3d(const RefCase& c, const ProcessGrid& grid) {
  MaxPool3d<double>::Options o;
  o.kernel = intAttribute(c, "kernel", o.kernel);
  o.stride = intAttribute(c, "stride", o.kernel);
  o.padding = intAttribute(c, "padding", 0);
  return runPool<MaxPool3d<double>>(c, grid, o);
}

std::vector<Comparison> runAvgPool3d(const RefCase& c, const ProcessGrid& grid) {
  AvgPool3d<double>::Options o;
  o.kernel = intAttribute(c, "kernel", o.kernel);
  o.stride = intAttribute(c, "stride", o.kernel);
  o.padding = intAttribute(c, "padding", 0);
  o.countIncludePad = intAttribute(c, "count_include_pad", 1) != 0;
  return runPool<AvgPool3d<double>>(c, grid, o);
}

std::vector<Comparison> runMaxPool3dCase(const RefCase& c, const ProcessGrid& grid) {
  return onEveryGroup(c, grid, &runMaxPool3d);
}

std::vector<Comparison> runAvgPool3dCase(const RefCase& c, const ProcessGrid& grid) {
  return onEveryGroup(c, grid, &runAvgPool3d);
}

const RefOp maxPoolReg{"max_pool3d", &runMaxPool3dCase};
const RefOp avgPoolReg{"avg_pool3d", &runAvgPool3dCase};

}  // namespace
}  // namespace hybrid3d::app::refcheck
