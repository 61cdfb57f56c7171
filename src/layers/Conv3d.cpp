// Explicit instantiations of Conv3d for the training and test scalars and the 16-bit
// activation types of mixed precision.
#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/layers/Conv3d.hpp>

namespace hybrid3d {
#define HYBRID3D_INSTANTIATE(T, D) template class Conv3d<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_INSTANTIATE)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_INSTANTIATE)
#undef HYBRID3D_INSTANTIATE
}  // namespace hybrid3d
