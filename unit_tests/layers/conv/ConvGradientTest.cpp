// Finite-difference checks of backward (double, 1 rank): for the loss L = sum(y * g) with a
// random g, central differences of L along a few random coordinates of the input and of each
// parameter must match backwardData's dx and backwardWeights' parameter gradients.
#include <random>

#include <gtest/gtest.h>

#include <hybrid3d/layers/Conv3d.hpp>
#include <hybrid3d/layers/ConvTranspose3d.hpp>

#include "ConvHarness.hpp"
#include "LayerTensors.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

template <class Layer>
void expectGradientsMatchFiniteDifferences(const TensorShape& in,
                                           const typename Layer::Options& options) {
  const ProcessGrid& grid = selfGrid();
  Layer layer(grid, "fd", in, options);
  setRandomParameters(layer, 3);
  const TensorShape out = layer.outputShape();
  const TestExecSpace exec;
  GlobalArray<double> xs = randomGlobal<double>("x", in.batch, in.channels, in.extents, 5);
  const GlobalArray<double> gs = randomGlobal<double>("g", out.batch, out.channels, out.extents, 6);
  // dL/dy = g: g is backward's dy.
  const auto t = layerTensors(layer, grid, xs, gs);

  auto loss = [&]() {
    scatterFromGlobal(xs, t.x);
    layer.forward(exec, t.x, t.y);
    const GlobalArray<double> ys = gatherToGlobal(t.y, MPI_COMM_SELF);
    double l = 0;
    for (std::size_t i = 0; i < ys.size(); ++i) l += ys.data()[i] * gs.data()[i];
    return l;
  };
  loss();
  layer.backward(exec, t.x, t.dy, t.dx);
  const GlobalArray<double> dxs = gatherToGlobal(t.dx, MPI_COMM_SELF);

  const double h = 1e-6, tol = 1e-7;
  std::mt19937 rng(11);
  for (int trial = 0; trial < 6; ++trial) {
    const std::size_t i = rng() % xs.size();
    const double keep = xs.data()[i];
    xs.data()[i] = keep + h;
    const double lp = loss();
    xs.data()[i] = keep - h;
    const double lm = loss();
    xs.data()[i] = keep;
    const double fd = (lp - lm) / (2 * h);
    EXPECT_NEAR(dxs.data()[i], fd, tol * std::max(1.0, std::abs(fd))) << "input element " << i;
  }
  for (const auto& p : layer.parameters()) {
    auto value = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.value);
    auto grad = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.grad);
    for (int trial = 0; trial < 4; ++trial) {
      const std::size_t i = rng() % value.size();
      const double keep = value(i);
      value(i) = keep + h;
      Kokkos::deep_copy(p.value, value);
      const double lp = loss();
      value(i) = keep - h;
      Kokkos::deep_copy(p.value, value);
      const double lm = loss();
      value(i) = keep;
      Kokkos::deep_copy(p.value, value);
      const double fd = (lp - lm) / (2 * h);
      EXPECT_NEAR(grad(i), fd, tol * std::max(1.0, std::abs(fd))) << p.name << " element " << i;
    }
  }
}

TEST(Conv3d, GradientsMatchFiniteDifferences) {
  for (const Int3& ksp : std::vector<Int3>{{3, 1, 1}, {3, 2, 1}, {5, 2, 2}, {1, 1, 0}}) {
    Conv3d<double, TestDevice>::Options o;
    o.outChannels = 3;
    o.kernel = ksp[0];
    o.stride = ksp[1];
    o.padding = ksp[2];
    o.bias = true;
    SCOPED_TRACE("kernel " + std::to_string(ksp[0]) + " stride " + std::to_string(ksp[1]));
    expectGradientsMatchFiniteDifferences<Conv3d<double, TestDevice>>({2, 2, {5, 4, 6}}, o);
  }
}

TEST(ConvTranspose3d, GradientsMatchFiniteDifferences) {
  for (int k : {2, 3}) {
    ConvTranspose3d<double, TestDevice>::Options o;
    o.outChannels = 3;
    o.kernel = k;
    o.stride = k;
    o.bias = true;
    SCOPED_TRACE("kernel " + std::to_string(k));
    expectGradientsMatchFiniteDifferences<ConvTranspose3d<double, TestDevice>>({2, 2, {3, 2, 4}},
                                                                               o);
  }
}

}  // namespace
}  // namespace hybrid3d::test
