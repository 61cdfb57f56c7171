// Explicit instantiations of Concat for the training and test scalars.
#include <hybrid3d/layers/Concat.hpp>

namespace hybrid3d {
template class Concat<float>;
template class Concat<double>;
}  // namespace hybrid3d
