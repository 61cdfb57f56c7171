// Explicit instantiations of the point-wise activations for the training and test scalars.
#include <hybrid3d/layers/Activation.hpp>

namespace hybrid3d {
template class Pointwise<LeakyReLUOp, float>;
template class Pointwise<LeakyReLUOp, double>;
template class Pointwise<ScaledTanhOp, float>;
template class Pointwise<ScaledTanhOp, double>;
template class Pointwise<Log1pOp, float>;
template class Pointwise<Log1pOp, double>;
}  // namespace hybrid3d
