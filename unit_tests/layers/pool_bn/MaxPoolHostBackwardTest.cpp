// MaxPool3d's backward on host memory for windows that tile the volume
// (kernels/MaxPool3dBackwardHost.hpp) gives every local cell of dx, ghosts included, the very bits
// of the device form (maxPoolBackwardTiled), with its baseline and its AVX2 build (the latter
// where the CPU has AVX2), on every grid, in float, double, bfloat16 and half, with ties, signed
// zeros and NaNs in x (so in the argmax) and signed zeros in dy.

#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include <hybrid3d/layers/MaxPool3d.hpp>

#include "DifferingCells.hpp"
#include "GridCases.hpp"
#include "Invariance.hpp"
#include "ScalarName.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

template <class T, class M>
void expectHostBackwardBits(const ProcessGrid& grid, const Index3& e) {
  SCOPED_TRACE(std::string("max 2/2/0, ") + scalarName<T>());
  const Impl::Pool3dPlan<T, M> plan(grid, "MaxPool3d", "pool", {2, 3, e}, Window::cubic(2, 2, 0));
  const auto x = createDistTensor<T, M>("x", 2, 3, plan.spatial().inputDecomposition(),
                                        grid.coords(), plan.spatial().inputGhosts());
  auto global = randomGlobal<double>("x", 2, 3, e, 61 + grid.group());
  for (std::size_t i = 0; i < global.size(); ++i) {
    if (i % 7 == 0) global.data()[i] = 0.5;
    if (i % 11 == 0) global.data()[i] = i % 2 ? -0.0 : 0.0;
    if (i % 29 == 0) global.data()[i] = std::numeric_limits<double>::quiet_NaN();
  }
  scatterFromGlobal(convertGlobal<T>(global), x);
  const TensorShape& out = plan.spatial().outputShape();
  const auto dy =
      createDistTensor<T, M>("dy", out.batch, out.channels, plan.spatial().outputDecomposition(),
                             grid.coords(), GhostWidths{{1, 0, 1}, {0, 1, 1}});
  auto dyGlobal = randomGlobal<double>("dy", 2, 3, out.extents, 67 + grid.group());
  for (std::size_t i = 0; i < dyGlobal.size(); i += 5) dyGlobal.data()[i] = i % 2 ? -0.0 : 0.0;
  scatterFromGlobal(convertGlobal<T>(dyGlobal), dy);
  // The argmax from the forward's device form.
  const Impl::PoolGeometry g = plan.geometry();
  const Box3 owned = plan.outputOwned();
  const Index3 oe = owned.extents();
  const auto y = createDistTensor<T, M>("y", 2, 3, plan.spatial().outputDecomposition(),
                                        grid.coords(), GhostWidths::uniform(0));
  Kokkos::View<int*****, Kokkos::LayoutRight, M> arg("argmax", 2, 3, oe[0], oe[1], oe[2]);
  const typename M::execution_space exec;
  Impl::maxPoolForwardUnpadded<2, 2>(exec, Impl::OwnedRows(2, 3, oe), g, Impl::originOf(x),
                                     Impl::ghostOffset(y), x.view(), y.view(), arg);
  auto dx = [&](const char* label, T fill) {
    const auto t = createDistTensor<T, M>(label, 2, 3, plan.spatial().inputDecomposition(),
                                          grid.coords(), plan.spatial().inputGhosts());
    Kokkos::deep_copy(t.view(), fill);  // cells a form leaves unwritten differ
    return t;
  };
  const auto device = dx("dx device form", T(7));
  const Impl::Origin3 xo = Impl::originOf(device);
  const Index3 b{g.start(0, g.outLo[0]) - xo.v[0], g.start(1, g.outLo[1]) - xo.v[1],
                 g.start(2, g.outLo[2]) - xo.v[2]};
  const Impl::OwnedRows rows(2, 3, device.localBox().extents());
  Impl::maxPoolBackwardTiled<2>(exec, rows, b, oe, Impl::ghostOffset(dy), device.view(), dy.view(),
                                arg);
  for (const Impl::HostIsa isa : {Impl::HostIsa::Baseline, Impl::HostIsa::Avx2}) {
    if (isa == Impl::HostIsa::Avx2 && Impl::bestHostIsa() != Impl::HostIsa::Avx2) continue;
    SCOPED_TRACE(isa == Impl::HostIsa::Avx2 ? "AVX2" : "baseline");
    const auto host = dx("dx host", T(std::numeric_limits<float>::quiet_NaN()));
    Impl::maxPoolBackwardTiledHost<2>(exec, rows, b, oe, Impl::ghostOffset(dy), host.view(),
                                      dy.view(), arg, isa);
    exec.fence();
    EXPECT_EQ(differingCells(host.view(), device.view()), 0u);
  }
}

// A template, so that the host-only kernels are never instantiated for device memory (see
// MaxPoolHostForwardTest.cpp).
template <class M>
void expectHostBackwardBitsOnEveryGrid() {
  if constexpr (!Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                            typename M::memory_space>::accessible) {
    GTEST_SKIP() << "the host backward runs on host memory only";
  } else {
    const int ran = forEachGrid(standardGridCases(), [](const ProcessGrid& grid, const GridCase&) {
      // Odd extents (cells past the last window), and rows long enough for whole AVX2 vectors
      // and their tails.
      for (const Index3& e : {Index3{7, 6, 9}, Index3{6, 8, 70}}) {
        expectHostBackwardBits<float, M>(grid, e);
        expectHostBackwardBits<double, M>(grid, e);
        expectHostBackwardBits<bfloat16, M>(grid, e);
        expectHostBackwardBits<float16, M>(grid, e);
      }
    });
    EXPECT_GE(ran, 1);
  }
}

TEST(MaxPool3d, HostTiledBackwardHasTheDeviceFormsBitsOnEveryInstructionSetAndGrid) {
  expectHostBackwardBitsOnEveryGrid<TestDevice>();
}

}  // namespace
}  // namespace hybrid3d::test
