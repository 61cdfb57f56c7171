#pragma once
/// \file
/// Activations of the dense layers: [N, F], LayoutRight, the same on every rank of a spatial
/// group (replicated once the first dense layer has summed its partial products).

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
using FeatureView = Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace>;

}  // namespace hybrid3d
