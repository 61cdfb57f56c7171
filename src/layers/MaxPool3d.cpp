// Explicit instantiations of MaxPool3d for the training and test scalars.
#include <hybrid3d/layers/MaxPool3d.hpp>

namespace hybrid3d {
template class MaxPool3d<float, DefaultMemorySpace>;
template class MaxPool3d<double, DefaultMemorySpace>;
}  // namespace hybrid3d
