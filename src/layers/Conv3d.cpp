// Explicit instantiations of Conv3d for the training and test scalars.
#include <hybrid3d/layers/Conv3d.hpp>

namespace hybrid3d {
template class Conv3d<float, DefaultMemorySpace>;
template class Conv3d<double, DefaultMemorySpace>;
}  // namespace hybrid3d
