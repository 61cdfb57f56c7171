// Explicit instantiations of AvgPool3d for the training and test scalars.
#include <hybrid3d/layers/AvgPool3d.hpp>

namespace hybrid3d {
template class AvgPool3d<float, DefaultMemorySpace>;
template class AvgPool3d<double, DefaultMemorySpace>;
}  // namespace hybrid3d
