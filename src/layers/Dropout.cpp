// Explicit instantiations of Dropout for the training and test scalars.
#include <hybrid3d/layers/Dropout.hpp>

namespace hybrid3d {
template class Dropout<float>;
template class Dropout<double>;
}  // namespace hybrid3d
