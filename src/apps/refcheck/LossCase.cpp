// Reference-checker runners for the losses: "mse_loss" (replicated [N, F] predictions, run
// alike on every rank of a group) and "softmax_cross_entropy" (distributed [N, C, D, H, W]
// logits, int32 labels [N, D, H, W]). Any shapes.
//
// The case's batch is the global mini-batch (overGroups in RefCase.hpp): when the G groups
// divide it, group g runs samples [g*N/G, (g+1)*N/G) and the losses reduce over the groups, as
// in training; otherwise every group runs the whole case on a grid of its own. Every rank
// returns the worst error.
#include <algorithm>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/layers/MseLoss.hpp>
#include <hybrid3d/layers/SoftmaxCrossEntropy.hpp>

#include "RefCase.hpp"

namespace hybrid3d::app::refcheck {
namespace {

using Exec = DefaultExecutionSpace;

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
    out.push_back(compareSamples(c, "grad_input", g, first, count));
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
  if (c.has("grad_input")) out.push_back(compareSamples(c, "grad_input", dx, grid, first, count));
  return out;
}

const RefOp mseReg{"mse_loss", groupedRunner<runMse>};
const RefOp crossEntropyReg{"softmax_cross_entropy", groupedRunner<runCrossEntropy>};

}  // namespace
}  // namespace hybrid3d::app::refcheck
