// Explicit instantiations of the redistribution for the training and test scalars, and for the
// segmentation labels (int) a task moves to its output's layout.
#include <hybrid3d/comm/Redistribute.hpp>
#include <hybrid3d/core/Devices.hpp>

namespace hybrid3d {
#define HYBRID3D_INSTANTIATE(T, D) template class Redistribute<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_INSTANTIATE)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_INSTANTIATE)
#undef HYBRID3D_INSTANTIATE
template class Redistribute<int, DefaultMemorySpace>;
}  // namespace hybrid3d
