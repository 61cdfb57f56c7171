// Explicit instantiations of the losses for the training and test scalars.
#include <hybrid3d/layers/MseLoss.hpp>
#include <hybrid3d/layers/SoftmaxCrossEntropy.hpp>

namespace hybrid3d {
template class MseLoss<float>;
template class MseLoss<double>;
template class SoftmaxCrossEntropy<float>;
template class SoftmaxCrossEntropy<double>;
}  // namespace hybrid3d
