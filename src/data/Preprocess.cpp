#include <hybrid3d/data/Preprocess.hpp>

namespace hybrid3d::data {

template class Preprocess<float, DefaultMemorySpace>;
template class Preprocess<double, DefaultMemorySpace>;
template class Preprocess<bfloat16, DefaultMemorySpace>;
template class Preprocess<float16, DefaultMemorySpace>;

}  // namespace hybrid3d::data
