// AvgPool3d's forward on host memory (impl/AvgPool3dForwardHost.hpp) gives the very bits of the
// device form (avgPoolForwardRowSums) with its baseline and its AVX2 row function (the latter
// where the CPU has AVX2), on every grid, in float, double, bfloat16 and half, with padded cells
// counted or not and signed zeros in x.

#include <string>

#include <gtest/gtest.h>

#include <hybrid3d/layers/AvgPool3d.hpp>

#include "DifferingCells.hpp"
#include "GridCases.hpp"
#include "Invariance.hpp"
#include "ScalarName.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

template <class T, class M, int K, int S>
void expectHostForwardBits(const ProcessGrid& grid, int padding, bool countIncludePad,
                           const Index3& e) {
  SCOPED_TRACE("avg " + std::to_string(K) + "/" + std::to_string(S) + "/" +
               std::to_string(padding) + (countIncludePad ? "" : " excluding pad") + ", " +
               scalarName<T>());
  const Impl::Pool3dPlan<T, M> plan(grid, "AvgPool3d", "pool", {2, 3, e},
                                    Window::cubic(K, S, padding));
  Kokkos::View<ComputeOf<T>*, M> inverseCount[3];
  Impl::avgPoolInverseCounts(plan, countIncludePad, inverseCount);
  const auto x = createDistTensor<T, M>("x", 2, 3, plan.spatial().inputDecomposition(),
                                        grid.coords(), plan.spatial().inputGhosts());
  auto global = randomGlobal<double>("x", 2, 3, e, 97 + grid.group());
  for (std::size_t i = 0; i < global.size(); i += 13) global.data()[i] = i % 2 ? -0.0 : 0.0;
  scatterFromGlobal(convertGlobal<T>(global), x);
  const typename M::execution_space exec;
  plan.halo().gather(exec, x);  // the padding's zeros and the neighbours' cells, as forward
  auto output = [&](const char* label) {
    const auto y = createDistTensor<T, M>(label, 2, 3, plan.spatial().outputDecomposition(),
                                          grid.coords(), GhostWidths{{1, 0, 1}, {0, 1, 1}});
    Kokkos::deep_copy(y.view(), T(3));
    return y;
  };
  const Impl::PoolGeometry g = plan.geometry();
  const Impl::OwnedRows rows(2, 3, plan.outputOwned().extents());
  const Impl::Origin3 xo = Impl::originOf(x);
  const auto device = output("device form");
  const auto oy = Impl::ghostOffset(device);
  Impl::avgPoolForwardRowSums<K, S>(exec, rows, g, xo, oy, x.view(), device.view(), inverseCount[0],
                                    inverseCount[1], inverseCount[2]);
  for (const Impl::HostIsa isa : {Impl::HostIsa::Baseline, Impl::HostIsa::Avx2}) {
    if (isa == Impl::HostIsa::Avx2 && Impl::bestHostIsa() != Impl::HostIsa::Avx2) continue;
    SCOPED_TRACE(isa == Impl::HostIsa::Avx2 ? "AVX2" : "baseline");
    const auto host = output("host");
    Impl::avgPoolForwardHost<K, S>(exec, rows, g, xo, oy, x.view(), host.view(), inverseCount[0],
                                   inverseCount[1], inverseCount[2], isa);
    exec.fence();
    EXPECT_EQ(differingCells(host.view(), device.view()), 0u);
  }
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
      // CosmoFlow's window on odd and uneven extents and on rows long enough for whole AVX2
      // vectors and their tails, with and without padded cells counted, and the 2/2 window.
      for (const Index3& e : {Index3{9, 7, 6}, Index3{6, 8, 70}}) {
        expectHostForwardBits<float, M, 3, 2>(grid, 1, true, e);
        expectHostForwardBits<double, M, 3, 2>(grid, 1, true, e);
        expectHostForwardBits<float, M, 3, 2>(grid, 1, false, e);
        expectHostForwardBits<bfloat16, M, 3, 2>(grid, 1, true, e);
        expectHostForwardBits<float16, M, 3, 2>(grid, 1, true, e);
      }
      expectHostForwardBits<float, M, 2, 2>(grid, 0, true, {7, 6, 41});
      expectHostForwardBits<double, M, 2, 2>(grid, 0, true, {7, 6, 41});
      expectHostForwardBits<bfloat16, M, 2, 2>(grid, 0, true, {7, 6, 41});
      // 16-bit rows of more outputs than one step of their float buffers (kAvgPoolChunk).
      const Index3 longRows{3, 3, 2 * Impl::kAvgPoolChunk + 23};
      expectHostForwardBits<bfloat16, M, 3, 2>(grid, 1, true, longRows);
      expectHostForwardBits<float16, M, 3, 2>(grid, 1, true, longRows);
    });
    EXPECT_GE(ran, 1);
  }
}

TEST(AvgPool3d, HostForwardHasTheDeviceFormsBitsOnEveryInstructionSetAndGrid) {
  expectHostForwardBitsOnEveryGrid<TestDevice>();
}

}  // namespace
}  // namespace hybrid3d::test
