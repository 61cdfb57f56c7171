// Reference-checker runner for "batch_norm3d": builds BatchNorm3d (global statistics, so the
// result equals single-process PyTorch on the case's whole batch) from the input shape and the
// attributes momentum (default 0.1), eps (1e-5) and training (1), with weight and bias when the
// case has them (affine) and running statistics from datasets running_mean / running_var when
// present, else PyTorch's (0, 1). Runs forward and, with grad_output, backward in double on the
// given grid and compares output, grad_input, grad_weight, grad_bias, running_mean_after and
// running_var_after, whichever the case holds. With G data-parallel groups, group g runs
// samples [g*N/G, (g+1)*N/G) of the case's N (the statistics still cover all N), or all N on a
// grid of its own when G does not divide N.

#include <climits>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/layers/BatchNorm3d.hpp>

#include "RefCase.hpp"

namespace hybrid3d::app::refcheck {
namespace {

using Layer = BatchNorm3d<double>;

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

// Copies a per-channel dataset into a layer vector (parameter or buffer).
void load(const RefCase& c, const std::string& dataset, const Kokkos::View<double*>& to) {
  const std::vector<double> v = c.flat(dataset);
  if (v.size() != to.size())
    fail(c.path(), ": dataset '", dataset, "' has ", v.size(), " values, expected ", to.size(),
         " (one per channel)");
  auto h = Kokkos::create_mirror_view(to);
  for (std::size_t i = 0; i < v.size(); ++i) h(i) = v[i];
  Kokkos::deep_copy(to, h);
}

Comparison compareVector(const std::string& name, const Kokkos::View<double*>& got,
                         const RefCase& c, const std::string& dataset) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), got);
  return compare(name, h, c.tensor(dataset));
}

std::vector<Comparison> runBatchNorm3d(const RefCase& c, const ProcessGrid& grid) {
  const GlobalArray<double> x = groupSamples(c.tensor("input"), grid);
  const TensorShape shape{static_cast<int>(x.extent(0)), static_cast<int>(x.extent(1)),
                          {Index(x.extent(2)), Index(x.extent(3)), Index(x.extent(4))}};
  Layer::Options o;
  if (c.hasNumber("momentum")) o.momentum = c.number("momentum");
  if (c.hasNumber("eps")) o.eps = c.number("eps");
  o.affine = c.has("weight") || c.has("bias");
  Layer layer(grid, c.op(), shape, o);
  layer.setTraining(!c.hasNumber("training") || c.number("training") != 0);
  for (const auto& p : layer.parameters()) load(c, p.name, p.value);  // "weight", "bias"
  const auto buffers = layer.buffers();  // running_mean, running_var
  for (const auto& b : buffers)
    if (c.has(b.name)) load(c, b.name, b.value);

  auto make = [&](const char* label) {
    return createDistTensor<double>(label, shape.batch, shape.channels,
                                    layer.inputDecomposition(), grid.coords());
  };
  auto xt = make("input");
  auto yt = make("output");
  scatterFromGlobal(x, xt);
  Layer::execution_space exec;
  layer.forward(exec, xt, yt);

  std::vector<Comparison> result;
  auto whole = [&](const DistTensor<double>& t) {
    return wholeBatch(gatherToGlobal(t, grid.spatialComm()), grid);
  };
  if (c.has("output")) result.push_back(compare("output", whole(yt), c.tensor("output")));
  for (const auto& b : buffers)
    if (c.has(b.name + "_after"))
      result.push_back(compareVector(b.name + "_after", b.value, c, b.name + "_after"));
  if (c.has("grad_output")) {
    auto dy = make("grad_output");
    auto dx = make("grad_input");
    scatterFromGlobal(groupSamples(c.tensor("grad_output"), grid), dy);
    layer.backward(exec, xt, dy, dx);
    if (c.has("grad_input")) result.push_back(compare("grad_input", whole(dx), c.tensor("grad_input")));
    for (const auto& p : layer.parameters()) {
      if (!c.has("grad_" + p.name)) continue;
      allreduceSum(p.grad, grid.worldComm());  // the gradient contract: sum over all ranks
      result.push_back(compareVector("grad_" + p.name, p.grad, c, "grad_" + p.name));
    }
  }
  return result;
}

std::vector<Comparison> runBatchNorm3dCase(const RefCase& c, const ProcessGrid& grid) {
  return onEveryGroup(c, grid, &runBatchNorm3d);
}

const RefOp batchNormReg{"batch_norm3d", &runBatchNorm3dCase};

}  // namespace
}  // namespace hybrid3d::app::refcheck
