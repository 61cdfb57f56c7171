// The float instantiations (the training scalar) compute what the double ones do, to float
// rounding, on a grid with halos: forward, input gradient and weight gradient.
#include <gtest/gtest.h>

#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/layers/Conv3d.hpp>
#include <hybrid3d/layers/ConvTranspose3d.hpp>

#include "ConvHarness.hpp"
#include "GridCases.hpp"
#include "LayerTensors.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

struct Results {
  GlobalArray<double> y, dx, dw;
};

// Runs Layer (of scalar T) on `grid` and returns its results widened to double.
template <template <class, class> class L, class T>
Results runIn(const ProcessGrid& grid, const TensorShape& in,
              const typename L<T, TestDevice>::Options& o, const GlobalArray<double>& x,
              const GlobalArray<double>& dy) {
  L<T, TestDevice> layer(grid, "conv", in, o);
  const auto params = layer.parameters();
  {
    auto h = Kokkos::create_mirror_view(params[0].value);
    for (std::size_t i = 0; i < h.size(); ++i) h(i) = T(0.01) * T(int(i % 97) - 48);
    Kokkos::deep_copy(params[0].value, h);
  }
  const ForwardBackward run = forwardBackward(layer, grid, x, dy);
  allreduceSum(params[0].grad, grid.worldComm());
  auto hw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), params[0].grad);
  GlobalArray<double> dw("dw", hw.size(), 1, 1, 1, 1);
  for (std::size_t i = 0; i < hw.size(); ++i) dw.data()[i] = double(hw(i));
  return {run.y, run.dx, dw};
}

template <template <class, class> class L>
void expectFloatAgreesWithDouble(const TensorShape& in,
                                 const typename L<float, TestDevice>::Options& of,
                                 const typename L<double, TestDevice>::Options& od) {
  const std::vector<GridCase> grids{{{1, 1, 1}, 1}, {{2, 1, 1}, 1}, {{1, 2, 2}, 1}};
  const int ran = forEachGrid(grids, [&](const ProcessGrid& grid, const GridCase&) {
    const TensorShape out = L<double, TestDevice>(selfGrid(), "s", in, od).outputShape();
    const auto x = randomGlobal<double>("x", in.batch, in.channels, in.extents, 31);
    const auto dy = randomGlobal<double>("dy", out.batch, out.channels, out.extents, 32);
    const auto f = runIn<L, float>(grid, in, of, x, dy);
    const auto d = runIn<L, double>(grid, in, od, x, dy);
    expectSameArray(f.y, d.y, 1e-5, "output");
    expectSameArray(f.dx, d.dx, 1e-5, "grad_input");
    expectSameArray(f.dw, d.dw, 1e-5, "grad_weight");
  });
  EXPECT_GE(ran, 1);
}

TEST(Conv3d, FloatAgreesWithDouble) {
  Conv3d<float, TestDevice>::Options of;
  of.outChannels = 4;
  of.stride = 2;
  Conv3d<double, TestDevice>::Options od;
  od.outChannels = 4;
  od.stride = 2;
  expectFloatAgreesWithDouble<Conv3d>({2, 3, {7, 6, 5}}, of, od);
}

TEST(ConvTranspose3d, FloatAgreesWithDouble) {
  ConvTranspose3d<float, TestDevice>::Options of;
  of.outChannels = 4;
  ConvTranspose3d<double, TestDevice>::Options od;
  od.outChannels = 4;
  expectFloatAgreesWithDouble<ConvTranspose3d>({2, 3, {5, 3, 4}}, of, od);
}

}  // namespace
}  // namespace hybrid3d::test
