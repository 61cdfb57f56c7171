#pragma once
// Runs a convolution layer (Conv3d or ConvTranspose3d) forward and backward on one process grid
// from global arrays, and hands back the global results: the pattern every conv test shares.

#include <random>
#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/layers/Conv3d.hpp>
#include <hybrid3d/layers/Parameter.hpp>

#include "Invariance.hpp"
#include "LayerTensors.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {

struct ConvResult {
  GlobalArray<double> y, dx;
  std::vector<std::vector<double>> grads;  // weight, bias: this rank's contribution
};

// The same pseudo-random parameter values on every rank for a given seed.
template <class Layer>
void setRandomParameters(const Layer& layer, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (const auto& p : layer.parameters()) {
    auto h = Kokkos::create_mirror_view(p.value);
    for (std::size_t i = 0; i < h.size(); ++i) h.data()[i] = u(rng);
    Kokkos::deep_copy(p.value, h);
  }
}

// Builds the layer on `grid`, runs forward on x and backward with dy (both global arrays of
// this group's samples, in the layer's scalar); y and dy carry `outGhosts` (a following
// layer's ghosts). Results come back in double whatever the layer's scalar.
template <class Layer>
ConvResult runConv(const ProcessGrid& grid, const TensorShape& in,
                   const typename Layer::Options& options, const GlobalArray<double>& x,
                   const GlobalArray<double>& dy, unsigned paramSeed,
                   const GhostWidths& outGhosts = {}) {
  Layer layer(grid, "conv", in, options);
  setRandomParameters(layer, paramSeed);
  const ForwardBackward run = forwardBackward(layer, grid, x, dy, outGhosts);
  ConvResult r{run.y, run.dx, {}};
  for (const auto& p : layer.parameters()) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.grad);
    r.grads.emplace_back(h.data(), h.data() + h.size());
  }
  return r;
}

inline void sumOver(std::vector<std::vector<double>>& grads, MPI_Comm comm) {
  for (auto& g : grads)
    MPI_Allreduce(MPI_IN_PLACE, g.data(), int(g.size()), MPI_DOUBLE, MPI_SUM, comm);
}

// got equals want to `tolerance`: output, input gradient and each parameter gradient (relative
// to its largest entry).
inline void expectSameConvResult(const ConvResult& got, const ConvResult& want, double tolerance,
                                 const std::string& what) {
  expectSameArray(got.y, want.y, tolerance, what + ": output");
  expectSameArray(got.dx, want.dx, tolerance, what + ": grad_input");
  EXPECT_EQ(got.grads.size(), want.grads.size()) << what;
  for (std::size_t i = 0; i < got.grads.size() && i < want.grads.size(); ++i) {
    const double err = maxRelativeError(got.grads[i], want.grads[i]);
    EXPECT_LE(err, tolerance) << what << ": parameter gradient " << i << " max relative error "
                              << err;
  }
}

// Decomposition invariance of one configuration on `grid`: each group runs its own samples
// (seeded by group); the reference is the 1-rank run of the same samples by `Reference` (by
// default the same layer), and the world sum of the parameter gradients must equal the sum of
// the 1-rank gradients over the groups, all to `tolerance` relative to the largest entry.
template <class Layer, class Reference = Layer>
void expectSameAsOneRank(const ProcessGrid& grid, const TensorShape& in,
                         const typename Layer::Options& options,
                         const typename Reference::Options& referenceOptions,
                         const GhostWidths& outGhosts, double tolerance, const std::string& what) {
  const unsigned seed = 1000u + 17u * unsigned(grid.group());
  const GlobalArray<double> x = randomGlobal<double>("x", in.batch, in.channels, in.extents, seed);
  // The output shape comes from a 1-rank layer (cheap) so dy can be drawn before the run.
  const TensorShape out = Reference(selfGrid(), "shape", in, referenceOptions).outputShape();
  const GlobalArray<double> dy =
      randomGlobal<double>("dy", out.batch, out.channels, out.extents, seed + 1);
  ConvResult got = runConv<Layer>(grid, in, options, x, dy, 7, outGhosts);
  ConvResult want = runConv<Reference>(selfGrid(), in, referenceOptions, x, dy, 7);
  sumOver(got.grads, grid.worldComm());
  sumOver(want.grads, grid.dataComm());
  expectSameConvResult(got, want, tolerance, what);
}
template <class Layer>
void expectSameAsOneRank(const ProcessGrid& grid, const TensorShape& in,
                         const typename Layer::Options& options, const GhostWidths& outGhosts,
                         const std::string& what) {
  expectSameAsOneRank<Layer, Layer>(grid, in, options, options, outGhosts, 1e-12, what);
}

// Conv3d options of a test case (any struct with cout, k, s, p and bias) on `engine`.
template <class T, class Case>
typename Conv3d<T, TestDevice>::Options convOptions(const Case& c, ConvEngine engine) {
  typename Conv3d<T, TestDevice>::Options o;
  o.outChannels = c.cout;
  o.kernel = c.k;
  o.stride = c.s;
  o.padding = c.p;
  o.bias = c.bias;
  o.engine = engine;
  return o;
}

}  // namespace hybrid3d::test
