// Explicit instantiations of ConvTranspose3d for the training and test scalars and the 16-bit
// activation types of mixed precision.
#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/layers/ConvTranspose3d.hpp>

namespace hybrid3d {
#define HYBRID3D_INSTANTIATE(T, D) template class ConvTranspose3d<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_INSTANTIATE)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_INSTANTIATE)
#undef HYBRID3D_INSTANTIATE
}  // namespace hybrid3d
