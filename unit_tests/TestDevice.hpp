#pragma once
// The backend a per-backend test executable runs on. As in Cabana's test harness (one test
// source, one executable per enabled execution space) and Kokkos-Kernels' TestCategory /
// TestDevice: hybrid3d_backend_test (unit_tests/CMakeLists.txt) compiles each layer, halo and
// model test source once per enabled Kokkos backend, defining HYBRID3D_TEST_EXECSPACE
// (Kokkos::Serial, Kokkos::OpenMP, Kokkos::Cuda or Kokkos::HIP) and HYBRID3D_TEST_BACKEND (its
// name, as Kokkos prints it). The tests take their execution space and device from here, never
// the default ones, so an OpenMP build runs them on Serial too.

#include <type_traits>

#include <hybrid3d/core/SpaceTraits.hpp>

#ifndef HYBRID3D_TEST_EXECSPACE
#error "a per-backend test is compiled with HYBRID3D_TEST_EXECSPACE (hybrid3d_backend_test)"
#endif

namespace hybrid3d::test {

using TestExecSpace = HYBRID3D_TEST_EXECSPACE;
// The space parameter of the layers, tensors, halos and models under test: the backend's
// memory space where the backend is that space's default, else Kokkos::Device<Exec, Mem>.
using TestDevice = DeviceOf<TestExecSpace>;

static_assert(std::is_same_v<typename TestDevice::execution_space, TestExecSpace>,
              "the device under test must run on the backend the executable is built for");

}  // namespace hybrid3d::test
