// Explicit instantiations of ConvTranspose3d for the training and test scalars.
#include <hybrid3d/layers/ConvTranspose3d.hpp>

namespace hybrid3d {
template class ConvTranspose3d<float, DefaultMemorySpace>;
template class ConvTranspose3d<double, DefaultMemorySpace>;
}  // namespace hybrid3d
