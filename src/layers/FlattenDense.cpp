// Explicit instantiations of FlattenDense for the training and test scalars.
#include <hybrid3d/layers/FlattenDense.hpp>

namespace hybrid3d {
template class FlattenDense<float>;
template class FlattenDense<double>;
}  // namespace hybrid3d
