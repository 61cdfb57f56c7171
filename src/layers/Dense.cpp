// Explicit instantiations of Dense for the training and test scalars.
#include <hybrid3d/layers/Dense.hpp>

namespace hybrid3d {
template class Dense<float>;
template class Dense<double>;
}  // namespace hybrid3d
