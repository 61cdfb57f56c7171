#pragma once
/// \file
/// What the space parameter of hybrid3d's class templates may be, and which one runs on a given
/// execution space.
///
/// A space parameter is either a Kokkos memory space (HostSpace, CudaSpace, ...: its default
/// execution space runs the kernels) or a Kokkos::Device<Exec, Mem> naming both. Both expose
/// memory_space and execution_space, and Views take either. The Device form is what selects
/// Serial in a build whose default host space is OpenMP: both run on HostSpace, and
/// HostSpace::execution_space is the default one, so a memory space alone cannot name Serial.
///
/// Kokkos 4 has Kokkos::is_memory_space_v; Kokkos 3.4 only the \::value form, used here.

#include <type_traits>

#include <Kokkos_Core.hpp>

namespace hybrid3d {

template <class S>
struct is_memory_space_or_device : std::bool_constant<Kokkos::is_memory_space<S>::value> {};

template <class Exec, class Mem>
struct is_memory_space_or_device<Kokkos::Device<Exec, Mem>>
    : std::bool_constant<Kokkos::is_execution_space<Exec>::value &&
                         Kokkos::is_memory_space<Mem>::value> {};

template <class S>
inline constexpr bool is_memory_space_or_device_v = is_memory_space_or_device<S>::value;

/// The space parameter whose kernels run on Exec: Exec's memory space itself where Exec is that
/// space's default execution space (so one backend's code is exactly what DefaultMemorySpace
/// gives), else Kokkos::Device<Exec, that memory space>.
template <class Exec>
using DeviceOf =
    std::conditional_t<std::is_same_v<typename Exec::memory_space::execution_space, Exec>,
                       typename Exec::memory_space,
                       Kokkos::Device<Exec, typename Exec::memory_space>>;

}  // namespace hybrid3d

// One line in every public class template taking a space parameter S.
#define HYBRID3D_ASSERT_SPACE(S)                                                    \
  static_assert(::hybrid3d::is_memory_space_or_device_v<S>,                         \
                "hybrid3d: the space parameter must be a Kokkos memory space or a " \
                "Kokkos::Device<ExecutionSpace, MemorySpace>")
