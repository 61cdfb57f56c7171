// cosmoflow (LBANN 2020, DESIGN.md section 6): seven 3^3 convolutions with LeakyReLU(0.01),
// average pools while the volume is at least 4 wide, three dense layers with dropout.
#include <hybrid3d/core/Devices.hpp>

#include "impl/Builder.hpp"
#include "impl/ModelBuilders.hpp"
#include "impl/PlanBuilder.hpp"

namespace hybrid3d::Impl {

template <class B>
void defineCosmoFlow(B& b, const ModelOptions& o) {
  const int channels[7] = {16, 32, 64, 128, 256, 256, 256};
  const int S = o.inputWidth;
  int x = B::Input;
  for (int i = 1; i <= 7; ++i) {
    const std::string n = std::to_string(i);
    x = b.conv("conv" + n, x, channels[i - 1], 3, i == 4 ? 2 : 1, 1, false);
    x = b.leaky("act" + n, x, 0.01);
    const bool pooled = i <= 5 || (i == 6 && S >= 256) || (i == 7 && S == 512);
    if (pooled && b.shape(x).extents[0] >= 4) x = b.avgPool("pool" + n, x);
  }
  x = b.dropout("drop1", x, 0.8);
  x = b.flattenDense("fc1", x, 2048);
  x = b.leaky("act_fc1", x, 0.01);
  x = b.dropout("drop2", x, 0.8);
  x = b.dense("fc2", x, 256);
  x = b.leaky("act_fc2", x, 0.01);
  x = b.dropout("drop3", x, 0.8);
  b.dense("fc3", x, 4);
}

#define HYBRID3D_INSTANTIATE(T, D) \
  template void defineCosmoFlow(Builder<T, D>&, const ModelOptions&);
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_INSTANTIATE)
#undef HYBRID3D_INSTANTIATE
template void defineCosmoFlow(PlanBuilder&, const ModelOptions&);

}  // namespace hybrid3d::Impl
