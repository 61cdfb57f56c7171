#include <hybrid3d/io/Preprocess.hpp>

namespace hybrid3d::io {

template class Preprocess<float, DefaultMemorySpace>;
template class Preprocess<double, DefaultMemorySpace>;

}  // namespace hybrid3d::io
