// Reference-checker runners for the losses: "mse_loss" (replicated [N, F] predictions, run
// alike on every rank of a group) and "softmax_cross_entropy" (distributed [N, C, D, H, W]
// logits, int32 labels [N, D, H, W]). Any shapes.
//
// The case's batch is the global mini-batch: when the G groups divide it, group g runs samples
// [g*N/G, (g+1)*N/G) and the losses reduce over the groups, as in training; otherwise every
// group runs the whole case on a grid of its own. Every rank returns the worst error.
#include <algorithm>

#include <mpi.h>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/layers/MseLoss.hpp>
#include <hybrid3d/layers/SoftmaxCrossEntropy.hpp>

#include "RefCase.hpp"

namespace hybrid3d::app::refcheck {
namespace {

using Exec = DefaultExecutionSpace;

template <class T>
GlobalArray<T> samples(const GlobalArray<T>& a, Index first, Index count) {
  GlobalArray<T> s(a.label(), count, a.extent(1), a.extent(2), a.extent(3), a.extent(4));
  Kokkos::deep_copy(s, Kokkos::subview(a, Kokkos::pair<Index, Index>(first, first + count),
                                       Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL));
  return s;
}

FeatureView<double> toFeatures(const GlobalArray<double>& a) {
  FeatureView<double> v(a.label(), a.extent(0), a.extent(1) * a.extent(2) * a.extent(3) * a.extent(4));
  auto h = Kokkos::create_mirror_view(v);
  std::copy(a.data(), a.data() + a.size(), h.data());
  Kokkos::deep_copy(v, h);
  return v;
}

Comparison compareLoss(const RefCase& c, double loss) {
  GlobalArray<double> got("loss", 1, 1, 1, 1, 1);
  got(0, 0, 0, 0, 0) = loss;
  return compare("loss", got, c.tensor("loss"));
}

std::vector<Comparison> runMse(const RefCase& c, const ProcessGrid& grid, Index first,
                               Index count) {
  const GlobalArray<double> input = samples(c.tensor("input"), first, count);
  const Index F = Index(input.size()) / count;
  const MseLoss<double> loss(grid, "mse_loss", int(count), int(F));
  const FeatureView<double> p = toFeatures(input);
  const FeatureView<double> t = toFeatures(samples(c.tensor("target"), first, count));
  const Exec exec;
  std::vector<Comparison> out;
  const double value = loss.forward(exec, p, t);
  if (c.has("loss")) out.push_back(compareLoss(c, value));
  if (c.has("grad_input")) {
    const FeatureView<double> g("grad", count, F);
    loss.backward(exec, p, t, g);
    const GlobalArray<double> want = samples(c.tensor("grad_input"), first, count);
    GlobalArray<double> got("grad_input", want.extent(0), want.extent(1), want.extent(2),
                            want.extent(3), want.extent(4));
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), g);
    std::copy(h.data(), h.data() + h.size(), got.data());
    out.push_back(compare("grad_input", got, want));
  }
  return out;
}

std::vector<Comparison> runCrossEntropy(const RefCase& c, const ProcessGrid& grid, Index first,
                                        Index count) {
  const GlobalArray<double> input = samples(c.tensor("input"), first, count);
  const int C = int(input.extent(1));
  const Index3 e{Index(input.extent(2)), Index(input.extent(3)), Index(input.extent(4))};
  const std::vector<Index> ls = c.shape("target");
  if (ls.size() != 4 || ls[0] != c.shape("input").at(0) || ls[1] != e[0] || ls[2] != e[1] ||
      ls[3] != e[2])
    fail(c.path(), ": softmax_cross_entropy target must be [N, D, H, W] matching the input");
  const std::vector<int> flat = c.labels("target");
  GlobalArray<int> all("labels", ls[0], 1, e[0], e[1], e[2]);
  std::copy(flat.begin(), flat.end(), all.data());

  const SoftmaxCrossEntropy<double> loss(grid, "softmax_cross_entropy", {int(count), C, e});
  const BlockDecomposition& dec = loss.inputDecomposition();
  auto x = createDistTensor<double>("logits", int(count), C, dec, grid.coords());
  auto dx = createDistTensor<double>("dlogits", int(count), C, dec, grid.coords());
  auto labels = createDistTensor<int>("labels", int(count), 1, dec, grid.coords());
  scatterFromGlobal(input, x);
  scatterFromGlobal(samples(all, first, count), labels);
  const double value = loss.forwardBackward(Exec(), x, labels, dx);
  std::vector<Comparison> out;
  if (c.has("loss")) out.push_back(compareLoss(c, value));
  if (c.has("grad_input"))
    out.push_back(compare("grad_input", gatherToGlobal(dx, grid.spatialComm()),
                          samples(c.tensor("grad_input"), first, count)));
  return out;
}

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

std::vector<Comparison> runMseCase(const RefCase& c, const ProcessGrid& grid) {
  return overGroups(c, grid, runMse);
}
std::vector<Comparison> runCrossEntropyCase(const RefCase& c, const ProcessGrid& grid) {
  return overGroups(c, grid, runCrossEntropy);
}

const RefOp mseReg{"mse_loss", &runMseCase};
const RefOp crossEntropyReg{"softmax_cross_entropy", &runCrossEntropyCase};

}  // namespace
}  // namespace hybrid3d::app::refcheck
