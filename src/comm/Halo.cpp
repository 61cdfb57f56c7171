// Explicit instantiations of the halo engine for the training and test scalars, so that
// layers and tests do not each recompile its kernels.
#include <hybrid3d/comm/Halo.hpp>

namespace hybrid3d {
template class Halo<float, DefaultMemorySpace>;
template class Halo<double, DefaultMemorySpace>;
}  // namespace hybrid3d
