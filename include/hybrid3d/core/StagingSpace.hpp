#pragma once
/// \file
/// Where MPI sees data of a memory space it cannot read. Without GPU-aware MPI, device buffers
/// travel through host copies; those copies live in pinned (page-locked) host memory, so that
/// the device-host copies are true DMA transfers, asynchronous on an execution space instance,
/// rather than staged again by the driver through its own bounce buffer as pageable memory is.
/// Every user (halo, allreduce, gradient reduction) allocates its staging buffers once, with
/// stagingBuffer below, and asks mpiStagesThroughHost whether to use them. The host batches
/// the data loader fills for the device live in StagingSpace too (io/HostBatch.hpp).

#include <cstddef>
#include <string>
#include <type_traits>

#include <Kokkos_Core.hpp>

#include <hybrid3d/Config.hpp>

namespace hybrid3d {

namespace Impl {
// Pinned host memory of this Kokkos's GPU backend. Kokkos 4 names it SharedHostPinnedSpace
// (CudaHostPinnedSpace, HIPHostPinnedSpace, SYCLHostUSMSpace, or HostSpace without a GPU);
// older Kokkos (Debian's 3.4) only has the backend-specific names.
#if defined(KOKKOS_HAS_SHARED_HOST_PINNED_SPACE)
using PinnedHostSpace = Kokkos::SharedHostPinnedSpace;
#elif defined(KOKKOS_ENABLE_CUDA)
using PinnedHostSpace = Kokkos::CudaHostPinnedSpace;
#elif defined(KOKKOS_ENABLE_HIP)
using PinnedHostSpace = Kokkos::Experimental::HIPHostPinnedSpace;
#else
using PinnedHostSpace = Kokkos::HostSpace;
#endif

template <class MemorySpace>
inline constexpr bool hostAccessible =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename MemorySpace::memory_space>::accessible;
}  // namespace Impl

/// True when MPI must be handed host copies of buffers in MemorySpace: the host cannot read
/// that space and hybrid3d was not built with HYBRID3D_ENABLE_GPU_AWARE_MPI.
template <class MemorySpace>
inline constexpr bool mpiStagesThroughHost =
    !HYBRID3D_ENABLE_GPU_AWARE_MPI && !Impl::hostAccessible<MemorySpace>;

/// The host space of staging copies of MemorySpace's data: HostSpace when the host reads
/// MemorySpace itself, else the backend's pinned host space.
template <class MemorySpace>
using StagingSpace =
    std::conditional_t<Impl::hostAccessible<MemorySpace>, Kokkos::HostSpace, Impl::PinnedHostSpace>;

template <class T, class MemorySpace>
using StagingBuffer = Kokkos::View<T*, StagingSpace<MemorySpace>>;

/// A staging buffer of `size` elements when Stage (by default: when MPI needs one for
/// MemorySpace), else an empty view: nothing is allocated for host memory or GPU-aware MPI.
template <class T, class MemorySpace, bool Stage = mpiStagesThroughHost<MemorySpace>>
StagingBuffer<T, MemorySpace> stagingBuffer(const std::string& label, std::size_t size) {
  if constexpr (!Stage)
    return {};
  else
    return StagingBuffer<T, MemorySpace>(
        Kokkos::view_alloc(label + " (host staging)", Kokkos::WithoutInitializing), size);
}

}  // namespace hybrid3d
