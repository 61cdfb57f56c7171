// Reference-checker runners for the dense layers: "linear" (Dense on replicated [N, F]
// tensors, run alike on every rank) and "flatten_linear" (FlattenDense on a distributed
// [N, C, D, H, W] input). Any shapes.
//
// With G data-parallel groups the case's batch is the global mini-batch: when G divides it,
// group g runs samples [g*N/G, (g+1)*N/G) and the parameter gradients are summed over the world,
// exactly as in training; otherwise every group runs the whole case on a grid of its own.
// Every rank returns the worst error over all groups.
#include <algorithm>

#include <mpi.h>

#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/layers/Dense.hpp>
#include <hybrid3d/layers/FlattenDense.hpp>

#include "RefCase.hpp"

namespace hybrid3d::app::refcheck {
namespace {

using Exec = DefaultExecutionSpace;

// Samples [first, first + count) of a global array.
GlobalArray<double> samples(const GlobalArray<double>& a, Index first, Index count) {
  GlobalArray<double> s(a.label(), count, a.extent(1), a.extent(2), a.extent(3), a.extent(4));
  Kokkos::deep_copy(s, Kokkos::subview(a, Kokkos::pair<Index, Index>(first, first + count),
                                       Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL));
  return s;
}

// A replicated [N, F] device view holding an (N, F, 1, 1, 1) global array.
FeatureView<double> toFeatures(const GlobalArray<double>& a) {
  FeatureView<double> v(a.label(), a.extent(0), a.extent(1) * a.extent(2) * a.extent(3) * a.extent(4));
  auto h = Kokkos::create_mirror_view(v);
  std::copy(a.data(), a.data() + a.size(), h.data());
  Kokkos::deep_copy(v, h);
  return v;
}

template <class V>
GlobalArray<double> toHost(const V& v, const GlobalArray<double>& like) {
  GlobalArray<double> a(like.label(), like.extent(0), like.extent(1), like.extent(2),
                        like.extent(3), like.extent(4));
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  std::copy(h.data(), h.data() + h.size(), a.data());
  return a;
}

template <class P>
void loadParameter(const P& p, const GlobalArray<double>& a) {
  auto h = Kokkos::create_mirror_view(p.value);
  std::copy(a.data(), a.data() + a.size(), h.data());
  Kokkos::deep_copy(p.value, h);
}

// Runs samples [first, first + count) of the case on `grid`.
template <class Layer, class Input>
std::vector<Comparison> runDense(const RefCase& c, const ProcessGrid& grid, Layer& layer,
                                 const Input& x, const Input& dx, Index first, Index count) {
  const Exec exec;
  const auto params = layer.parameters();
  loadParameter(params[0], c.tensor("weight"));
  if (params.size() > 1) loadParameter(params[1], c.tensor("bias"));
  const GlobalArray<double> want = samples(c.tensor("output"), first, count);
  FeatureView<double> y("y", count, layer.outFeatures());
  layer.forward(exec, x, y);
  std::vector<Comparison> out{compare("output", toHost(y, want), want)};
  if (!c.has("grad_output")) return out;

  const FeatureView<double> dy = toFeatures(samples(c.tensor("grad_output"), first, count));
  layer.backward(exec, x, dy, dx);
  if (c.has("grad_input")) {
    const GlobalArray<double> wantDx = samples(c.tensor("grad_input"), first, count);
    if constexpr (std::is_same_v<Input, FeatureView<double>>)
      out.push_back(compare("grad_input", toHost(dx, wantDx), wantDx));
    else
      out.push_back(compare("grad_input", gatherToGlobal(dx, grid.spatialComm()), wantDx));
  }
  const char* gradNames[2] = {"grad_weight", "grad_bias"};
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!c.has(gradNames[i])) continue;
    allreduceSum(params[i].grad, grid.worldComm());
    const GlobalArray<double> want = c.tensor(gradNames[i]);
    out.push_back(compare(gradNames[i], toHost(params[i].grad, want), want));
  }
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
  const int C = int(input.extent(1));
  const Index3 e{Index(input.extent(2)), Index(input.extent(3)), Index(input.extent(4))};
  const std::vector<Index> w = c.shape("weight");
  FlattenDense<double> layer(grid, "flatten_linear", {int(count), C, e},
                             {int(w.at(0)), c.has("bias"), w.at(1)});
  const BlockDecomposition& dec = layer.inputDecomposition();
  auto x = createDistTensor<double>("x", int(count), C, dec, grid.coords());
  auto dx = createDistTensor<double>("dx", int(count), C, dec, grid.coords());
  scatterFromGlobal(input, x);
  return runDense(c, grid, layer, x, dx, first, count);
}

// Splits the batch over the groups (see the top of the file) and reduces the errors.
template <class Run>
std::vector<Comparison> overGroups(const RefCase& c, const ProcessGrid& grid, Run run) {
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

std::vector<Comparison> runLinearCase(const RefCase& c, const ProcessGrid& grid) {
  return overGroups(c, grid, runLinear);
}
std::vector<Comparison> runFlattenLinearCase(const RefCase& c, const ProcessGrid& grid) {
  return overGroups(c, grid, runFlattenLinear);
}

const RefOp linearReg{"linear", &runLinearCase};
const RefOp flattenLinearReg{"flatten_linear", &runFlattenLinearCase};

}  // namespace
}  // namespace hybrid3d::app::refcheck
