// Explicit instantiations of the halo engine for the training and test scalars, so that
// layers and tests do not each recompile its kernels.
#include <hybrid3d/comm/Halo.hpp>
#include <hybrid3d/core/Devices.hpp>

namespace hybrid3d {
#define HYBRID3D_INSTANTIATE(T, D) template class Halo<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_INSTANTIATE)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_INSTANTIATE)
#undef HYBRID3D_INSTANTIATE
}  // namespace hybrid3d
