// Explicit instantiations of BatchNorm3d for the training and test scalars.
#include <hybrid3d/layers/BatchNorm3d.hpp>

namespace hybrid3d {
template class BatchNorm3d<float, DefaultMemorySpace>;
template class BatchNorm3d<double, DefaultMemorySpace>;
}  // namespace hybrid3d
