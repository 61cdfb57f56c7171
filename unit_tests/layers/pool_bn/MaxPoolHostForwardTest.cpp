// MaxPool3d's forward on host memory (impl/MaxPool3dForwardHost.hpp) gives the very bits of the
// device form (maxPoolForwardUnpadded), maxima and argmax, with its baseline and its AVX2 row
// function (the latter where the CPU has AVX2), on every grid, in float, double, bfloat16 and half,
// with ties, signed zeros and NaNs (quiet, and signalling in 16 bits) in x (PyTorch's rule: the
// first of equal cells wins, NaN wins); without an argmax (an inference layer's) both give the same
// maxima.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

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
void expectHostForwardBits(const ProcessGrid& grid, int k, const Index3& e) {
  SCOPED_TRACE("max " + std::to_string(k) + "/" + std::to_string(k) + "/0, " + scalarName<T>());
  const Impl::Pool3dPlan<T, M> plan(grid, "MaxPool3d", "pool", {2, 3, e}, Window::cubic(k, k, 0));
  const auto x = createDistTensor<T, M>("x", 2, 3, plan.spatial().inputDecomposition(),
                                        grid.coords(), plan.spatial().inputGhosts());
  auto global = randomGlobal<double>("x", 2, 3, e, 83 + grid.group());
  // Ties (a run of equal cells), signed zeros and NaNs.
  for (std::size_t i = 0; i < global.size(); ++i) {
    if (i % 7 == 0) global.data()[i] = 0.5;
    if (i % 11 == 0) global.data()[i] = i % 2 ? -0.0 : 0.0;
    if (i % 29 == 0) global.data()[i] = std::numeric_limits<double>::quiet_NaN();
  }
  scatterFromGlobal(convertGlobal<T>(global), x);
  if constexpr (isScalar16<T>) {  // signalling NaNs too, of both signs (F16C would quiet them)
    auto bits = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x.view());
    for (std::size_t i = 0; i < bits.span(); i += 13)
      bits.data()[i].bits =
          std::uint16_t((i % 2 ? 0x8000u : 0u) | (std::is_same_v<T, bfloat16> ? 0x7f81u : 0x7c01u));
    Kokkos::deep_copy(x.view(), bits);
  }
  const Box3 owned = plan.outputOwned();
  const Index3 oe = owned.extents();
  auto outputs = [&](const char* label) {
    const auto y = createDistTensor<T, M>(label, 2, 3, plan.spatial().outputDecomposition(),
                                          grid.coords(), GhostWidths{{1, 0, 1}, {0, 1, 1}});
    Kokkos::deep_copy(y.view(), T(3));
    Kokkos::View<int*****, Kokkos::LayoutRight, M> arg(std::string(label) + " argmax", 2, 3, oe[0],
                                                       oe[1], oe[2]);
    Kokkos::deep_copy(arg, -1);
    return std::make_pair(y, arg);
  };
  const Impl::PoolGeometry g = plan.geometry();
  const Impl::OwnedRows rows(2, 3, oe);
  const Impl::Origin3 xo = Impl::originOf(x);
  const typename M::execution_space exec;
  const auto device = outputs("device form");
  const auto oy = Impl::ghostOffset(device.first);
  auto run = [&](auto K) {
    constexpr int kk = decltype(K)::value;
    Impl::maxPoolForwardUnpadded<kk, kk>(exec, rows, g, xo, oy, x.view(), device.first.view(),
                                         device.second);
    for (const Impl::HostIsa isa : {Impl::HostIsa::Baseline, Impl::HostIsa::Avx2}) {
      if (isa == Impl::HostIsa::Avx2 && Impl::bestHostIsa() != Impl::HostIsa::Avx2) continue;
      SCOPED_TRACE(isa == Impl::HostIsa::Avx2 ? "AVX2" : "baseline");
      const auto host = outputs("host");
      Impl::maxPoolForwardHost<kk, kk>(exec, rows, g, xo, oy, x.view(), host.first.view(),
                                       host.second, isa);
      exec.fence();
      EXPECT_EQ(differingCells(host.first.view(), device.first.view()), 0u) << "maxima";
      EXPECT_EQ(differingCells(host.second, device.second), 0u) << "argmax";
      // An inference layer keeps no winners (an empty argmax): the very same maxima.
      const auto bare = outputs("host, no argmax");
      Impl::maxPoolForwardHost<kk, kk>(exec, rows, g, xo, oy, x.view(), bare.first.view(),
                                       decltype(bare.second)(), isa);
      exec.fence();
      EXPECT_EQ(differingCells(bare.first.view(), device.first.view()), 0u) << "no argmax";
    }
    const auto bare = outputs("device form, no argmax");
    Impl::maxPoolForwardUnpadded<kk, kk>(exec, rows, g, xo, oy, x.view(), bare.first.view(),
                                         decltype(bare.second)());
    exec.fence();
    EXPECT_EQ(differingCells(bare.first.view(), device.first.view()), 0u) << "device, no argmax";
  };
  if (k == 2) run(std::integral_constant<int, 2>{});
  if (k == 3) run(std::integral_constant<int, 3>{});
}

// A template, so that the host-only kernels are never instantiated for device memory: an
// `if constexpr` discards its other branch only inside a template (nvcc's CUDA build of
// this test instantiated them from a plain TEST body and hit their static assertions).
template <class M>
void expectHostForwardBitsOnEveryGrid() {
  if constexpr (!Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                            typename M::memory_space>::accessible) {
    GTEST_SKIP() << "the host forward runs on host memory only";
  } else {
    const int ran = forEachGrid(standardGridCases(), [](const ProcessGrid& grid, const GridCase&) {
      // Odd extents (a cell past the last window), rows long enough for whole AVX2 vectors
      // and their tails, and a 3/3 window.
      for (const Index3& e : {Index3{7, 6, 9}, Index3{6, 8, 70}}) {
        expectHostForwardBits<float, M>(grid, 2, e);
        expectHostForwardBits<double, M>(grid, 2, e);
        expectHostForwardBits<bfloat16, M>(grid, 2, e);
        expectHostForwardBits<float16, M>(grid, 2, e);
      }
      expectHostForwardBits<float, M>(grid, 3, {9, 9, 31});
      // 16-bit rows of more outputs than one step of their float buffers (kMaxPoolChunk).
      const Index3 longRows{2, 2, 2 * Impl::kMaxPoolChunk + 21};
      expectHostForwardBits<bfloat16, M>(grid, 2, longRows);
      expectHostForwardBits<float16, M>(grid, 2, longRows);
    });
    EXPECT_GE(ran, 1);
  }
}

TEST(MaxPool3d, HostForwardHasTheDeviceFormsBitsOnEveryInstructionSetAndGrid) {
  expectHostForwardBitsOnEveryGrid<TestDevice>();
}

}  // namespace
}  // namespace hybrid3d::test
