// Compiled into every per-backend test executable (hybrid3d_backend_test): the layers,
// tensors, halos and models its tests build run on the backend the executable is named for,
// not on Kokkos's default one.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/comm/Halo.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/layers/Conv3d.hpp>
#include <hybrid3d/model/Graph.hpp>

#include "GridCases.hpp"
#include "Invariance.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

// The Kokkos Tools device id of a kernel launched on `space` (the namespace moved in Kokkos 4).
template <class Space>
std::uint32_t deviceId(const Space& space) {
#if KOKKOS_VERSION >= 40000
  return Kokkos::Tools::Experimental::device_id(space);
#else
  return Kokkos::Profiling::Experimental::device_id(space);
#endif
}

std::vector<std::uint32_t>& launchedOn() {
  static std::vector<std::uint32_t> devices;
  return devices;
}
void onKernel(const char*, std::uint32_t device, std::uint64_t*) { launchedOn().push_back(device); }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

TEST(Backend, TypesUnderTestRunOnTheExecutablesBackend) {
  static_assert(std::is_same_v<DistTensor<double, TestDevice>::execution_space, TestExecSpace>);
  static_assert(std::is_same_v<Conv3d<float, TestDevice>::execution_space, TestExecSpace>);
  static_assert(std::is_same_v<Halo<double, TestDevice>::execution_space, TestExecSpace>);
  static_assert(std::is_same_v<Graph<double, TestDevice>::execution_space, TestExecSpace>);
  // The executable's name (the CMake backend list) and the space it was compiled for agree.
  EXPECT_EQ(lower(TestExecSpace::name()), HYBRID3D_TEST_BACKEND);
}

// Sets every cell of a tensor's view to 1 with a kernel on the view's own execution space. A
// free function: CUDA forbids a device lambda in a test body (a private member function).
template <class View>
void fillWithOnes(const View& v) {
  Kokkos::parallel_for(
      "hybrid3d::test::fill", Kokkos::RangePolicy<typename View::execution_space>(0, v.extent(2)),
      KOKKOS_LAMBDA(int d) {
        for (std::size_t h = 0; h < v.extent(3); ++h)
          for (std::size_t w = 0; w < v.extent(4); ++w) v(0, 0, d, h, w) = 1.0;
      });
  typename View::execution_space().fence();
}

TEST(Backend, TensorsUnderTestAreViewsOfTheBackend) {
  const BlockDecomposition dec({4, 4, 4}, {1, 1, 1});
  auto t = createDistTensor<double, TestDevice>("t", 1, 1, dec, selfGrid().coords());
  using View = typename decltype(t)::view_type;
  static_assert(std::is_same_v<typename View::execution_space, TestExecSpace>);
  static_assert(std::is_same_v<typename View::memory_space, typename TestDevice::memory_space>);
  // A kernel on the tensor's own execution space fills it: the space is initialised and usable.
  auto v = t.view();
  fillWithOnes(v);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  double sum = 0;
  for (std::size_t i = 0; i < h.size(); ++i) sum += h.data()[i];
  EXPECT_EQ(sum, double(h.size()));
  if (lower(TestExecSpace::name()) == "serial") {
    EXPECT_EQ(TestExecSpace().concurrency(), 1);
  }
}

// Every kernel of a convolution's forward and backward (im2col, gemm, halo, bias) is launched
// on the backend under test, none on Kokkos's default execution space behind its back.
TEST(Backend, LayerKernelsLaunchOnTheExecutablesBackend) {
  Conv3d<double, TestDevice>::Options o;
  o.outChannels = 3;
  o.bias = true;
  o.engine = ConvEngine::Kokkos;
  const TensorShape in{1, 2, {5, 4, 6}};
  Conv3d<double, TestDevice> layer(selfGrid(), "conv", in, o);
  const Int3 at{0, 0, 0};
  auto x = createDistTensor<double, TestDevice>("x", 1, 2, layer.inputDecomposition(), at,
                                                layer.inputGhosts());
  auto dx = createDistTensor<double, TestDevice>("dx", 1, 2, layer.inputDecomposition(), at,
                                                 layer.inputGhosts());
  auto y = createDistTensor<double, TestDevice>("y", 1, 3, layer.outputDecomposition(), at);
  const TestExecSpace exec;
  launchedOn().clear();
  Kokkos::Tools::Experimental::set_begin_parallel_for_callback(onKernel);
  Kokkos::Tools::Experimental::set_begin_parallel_reduce_callback(onKernel);
  layer.forward(exec, x, y);
  layer.backward(exec, x, y, dx);
  exec.fence();
  Kokkos::Tools::Experimental::set_begin_parallel_reduce_callback(nullptr);
  Kokkos::Tools::Experimental::set_begin_parallel_for_callback(nullptr);
  ASSERT_FALSE(launchedOn().empty());
  for (std::uint32_t d : launchedOn()) EXPECT_EQ(d, deviceId(exec));
}

}  // namespace
}  // namespace hybrid3d::test
