#include <hybrid3d/data/Preprocess.hpp>

namespace hybrid3d::data {

template class Preprocess<float, DefaultMemorySpace>;
template class Preprocess<double, DefaultMemorySpace>;

}  // namespace hybrid3d::data
