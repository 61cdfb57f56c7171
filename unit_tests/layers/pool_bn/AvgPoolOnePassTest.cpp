// AvgPool3d's one-pass backward on host memory (impl/AvgPool3dBackwardHost.hpp), built for the
// baseline and (where the CPU has it) for AVX2, gives every local cell of dx, ghosts included,
// the very bits of the two-pass form every backend runs (scale dy, then sum the windows), on
// every grid, in float, double, bfloat16 and half, with signed zeros in dy. The layer takes the
// one-pass form on host backends, so this test also keeps the two-pass kernels running on a
// host-only build.

#include <cstring>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include <hybrid3d/layers/AvgPool3d.hpp>

#include "GridCases.hpp"
#include "Invariance.hpp"
#include "ScalarName.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

struct OnePassCase {
  const char* name;
  int kernel, stride, padding;
  bool countIncludePad;
  Index3 extents;  // a negative entry: twice the grid's extent there (one output per rank)
};

template <class T, class M>
void expectOnePassBits(const ProcessGrid& grid, const OnePassCase& c, Impl::HostIsa isa) {
  SCOPED_TRACE(std::string(c.name) + ", " + scalarName<T>() +
               (isa == Impl::HostIsa::Avx2 ? ", AVX2" : ", baseline"));
  Index3 e = c.extents;
  for (int d = 0; d < 3; ++d)
    if (e[d] < 0) e[d] = 2 * grid.dims()[d];
  const Impl::Pool3dPlan<T, M> plan(grid, "AvgPool3d", "pool", {2, 3, e},
                                    Window::cubic(c.kernel, c.stride, c.padding));
  Kokkos::View<ComputeOf<T>*, M> inverseCount[3];
  Impl::avgPoolInverseCounts(plan, c.countIncludePad, inverseCount);
  const TensorShape& out = plan.spatial().outputShape();
  const auto dy =
      createDistTensor<T, M>("dy", out.batch, out.channels, plan.spatial().outputDecomposition(),
                             grid.coords(), GhostWidths{{1, 0, 1}, {0, 1, 1}});
  auto global = randomGlobal<double>("dy", out.batch, out.channels, out.extents, 71 + grid.group());
  for (std::size_t i = 0; i < global.size(); i += 5) global.data()[i] = i % 2 ? -0.0 : 0.0;
  scatterFromGlobal(convertGlobal<T>(global), dy);
  auto dx = [&](const char* label, T fill) {
    const auto t = createDistTensor<T, M>(label, 2, 3, plan.spatial().inputDecomposition(),
                                          grid.coords(), plan.spatial().inputGhosts());
    Kokkos::deep_copy(t.view(), fill);  // cells a form leaves unwritten differ
    return t;
  };
  const auto onePass = dx("dx one pass", T(std::numeric_limits<float>::quiet_NaN()));
  const auto twoPass = dx("dx two passes", T(7));
  const Box3 owned = plan.outputOwned();
  const Kokkos::View<ComputeOf<T>*****, Kokkos::LayoutRight, M> scaledDy(
      "dy / divisor", 2, 3, owned.extent(0), owned.extent(1), owned.extent(2));
  const typename M::execution_space exec;
  ASSERT_TRUE(Impl::avgPoolBackwardOnePassHost(exec, plan, inverseCount, dy, onePass, isa));
  Impl::avgPoolBackwardTwoPass(exec, plan, inverseCount, scaledDy, dy, twoPass);
  exec.fence();
  const auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), onePass.view());
  const auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), twoPass.view());
  ASSERT_EQ(a.size(), b.size());
  std::size_t differ = 0, first = a.size();
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(a.data() + i, b.data() + i, sizeof(T)) != 0) {
      ++differ;
      if (first == a.size()) first = i;
    }
  EXPECT_EQ(differ, 0u) << "of " << a.size() << " local cells; the first at flat index " << first
                        << ": " << (first < a.size() ? double(float(a.data()[first])) : 0.0)
                        << " vs " << (first < b.size() ? double(float(b.data()[first])) : 0.0);
}

// A template, so that the host-only kernels are never instantiated for device memory: an
// `if constexpr` discards its other branch only inside a template (nvcc's CUDA build of
// this test instantiated them from a plain TEST body and hit their static assertions).
template <class M>
void expectOnePassBitsOnEveryGrid() {
  if constexpr (!Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                            typename M::memory_space>::accessible) {
    GTEST_SKIP() << "the one-pass backward runs on host memory only";
  } else {
    const int ran = forEachGrid(standardGridCases(), [](const ProcessGrid& grid, const GridCase&) {
      // CosmoFlow's window with and without padded cells counted, uneven and odd extents (an
      // odd leftover output at a rank's edge: cells with two outputs outside the interior),
      // one output per rank along every cut, rows long enough for many interior groups, and
      // the 2/2 window.
      for (const OnePassCase& c :
           {OnePassCase{"avg 3/2/1", 3, 2, 1, true, {9, 7, 6}},
            OnePassCase{"avg 3/2/1 excluding pad", 3, 2, 1, false, {7, 6, 9}},
            OnePassCase{"avg 3/2/1 one output per rank", 3, 2, 1, true, {-1, -1, -1}},
            OnePassCase{"avg 3/2/1 long rows", 3, 2, 1, true, {5, 6, 37}},
            OnePassCase{"avg 2/2/0", 2, 2, 0, true, {7, 6, 9}}}) {
        for (const Impl::HostIsa isa : {Impl::HostIsa::Baseline, Impl::HostIsa::Avx2}) {
          if (isa == Impl::HostIsa::Avx2 && Impl::bestHostIsa() != Impl::HostIsa::Avx2) continue;
          expectOnePassBits<float, M>(grid, c, isa);
          expectOnePassBits<double, M>(grid, c, isa);
          expectOnePassBits<bfloat16, M>(grid, c, isa);
          expectOnePassBits<float16, M>(grid, c, isa);
        }
      }
    });
    EXPECT_GE(ran, 1);
  }
}

TEST(AvgPool3d, OnePassHostBackwardHasTheTwoPassBitsOnEveryGrid) {
  expectOnePassBitsOnEveryGrid<TestDevice>();
}

}  // namespace
}  // namespace hybrid3d::test
