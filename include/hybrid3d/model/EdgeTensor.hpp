#pragma once
/// \file
/// What flows along an edge of a model graph: a distributed volume (the convolutional part) or
/// a replicated feature matrix [N, F] (the dense part, identical on every rank of a spatial
/// group once the first dense layer has summed its partial products).

#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/kernels/FeatureView.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
struct EdgeTensor {
  HYBRID3D_ASSERT_SPACE(MemorySpace);
  DistTensor<T, MemorySpace> volume;
  FeatureView<T, MemorySpace> features;

  bool isVolume() const { return features.data() == nullptr; }
  bool empty() const { return volume.view().data() == nullptr && features.data() == nullptr; }
};

}  // namespace hybrid3d
