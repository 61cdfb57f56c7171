#pragma once
/// \file
/// The devices the library's templates are compiled for (explicit instantiations in src/, extern
/// declarations in the public headers): DefaultMemorySpace, plus DeviceOf<Exec> of every other
/// enabled Kokkos backend, so that the unit tests run every layer, halo and model on each backend
/// built (Serial beside OpenMP; a host backend beside CUDA or HIP). A build with one backend
/// (Debian's Serial-only Kokkos) compiles exactly what it compiled before.
///
///      #define HYBRID3D_INSTANTIATE(T, D) template class Conv3d<T, D>;
///      HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_INSTANTIATE)
///      #undef HYBRID3D_INSTANTIATE
///
/// Scalars: float (training) and double (tests, reference checks); the 16-bit storage types of
/// mixed precision (core/Scalar16.hpp) through HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE.

#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/core/SpaceTraits.hpp>
#include <hybrid3d/core/Types.hpp>

#define HYBRID3D_SCALARS_ON(M, D) M(float, D) M(double, D)
#define HYBRID3D_SCALAR16S_ON(M, D) M(::hybrid3d::bfloat16, D) M(::hybrid3d::float16, D)

#if defined(KOKKOS_ENABLE_SERIAL) && !defined(KOKKOS_ENABLE_DEFAULT_DEVICE_TYPE_SERIAL)
#define HYBRID3D_ON_SERIAL(M) HYBRID3D_SCALARS_ON(M, ::hybrid3d::DeviceOf<Kokkos::Serial>)
#else
#define HYBRID3D_ON_SERIAL(M)
#endif

#if defined(KOKKOS_ENABLE_OPENMP) && !defined(KOKKOS_ENABLE_DEFAULT_DEVICE_TYPE_OPENMP)
#define HYBRID3D_ON_OPENMP(M) HYBRID3D_SCALARS_ON(M, ::hybrid3d::DeviceOf<Kokkos::OpenMP>)
#else
#define HYBRID3D_ON_OPENMP(M)
#endif

// M(T, D) for T in {float, double} and every device D the library is built for.
#define HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(M)           \
  HYBRID3D_SCALARS_ON(M, ::hybrid3d::DefaultMemorySpace) \
  HYBRID3D_ON_SERIAL(M)                                  \
  HYBRID3D_ON_OPENMP(M)

// M(T, D) for T in {bfloat16, float16} and every device D the library is built for.
#if defined(KOKKOS_ENABLE_SERIAL) && !defined(KOKKOS_ENABLE_DEFAULT_DEVICE_TYPE_SERIAL)
#define HYBRID3D_SCALAR16S_ON_SERIAL(M) \
  HYBRID3D_SCALAR16S_ON(M, ::hybrid3d::DeviceOf<Kokkos::Serial>)
#else
#define HYBRID3D_SCALAR16S_ON_SERIAL(M)
#endif
#if defined(KOKKOS_ENABLE_OPENMP) && !defined(KOKKOS_ENABLE_DEFAULT_DEVICE_TYPE_OPENMP)
#define HYBRID3D_SCALAR16S_ON_OPENMP(M) \
  HYBRID3D_SCALAR16S_ON(M, ::hybrid3d::DeviceOf<Kokkos::OpenMP>)
#else
#define HYBRID3D_SCALAR16S_ON_OPENMP(M)
#endif
#define HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(M)           \
  HYBRID3D_SCALAR16S_ON(M, ::hybrid3d::DefaultMemorySpace) \
  HYBRID3D_SCALAR16S_ON_SERIAL(M)                          \
  HYBRID3D_SCALAR16S_ON_OPENMP(M)
