// cosmoflow_mlperf (MLPerf HPC reference, DESIGN.md section 6): log1p of the input, five 3^3
// convolutions with bias, LeakyReLU(0.3) and 2^3 max pools, three dense layers, 1.2 tanh.
#include <hybrid3d/core/Devices.hpp>

#include "impl/Builder.hpp"
#include "impl/ModelBuilders.hpp"
#include "impl/PlanBuilder.hpp"

namespace hybrid3d::Impl {

template <class B>
void defineCosmoFlowMlperf(B& b, const ModelOptions&) {
  const int channels[5] = {32, 64, 128, 256, 512};
  int x = b.log1p("log1p", B::Input);
  for (int i = 1; i <= 5; ++i) {
    const std::string n = std::to_string(i);
    x = b.conv("conv" + n, x, channels[i - 1], 3, 1, 1, true);
    x = b.leaky("act" + n, x, 0.3);
    x = b.maxPool("pool" + n, x);
  }
  x = b.flattenDense("fc1", x, 128);
  x = b.leaky("act_fc1", x, 0.3);
  x = b.dropout("drop1", x, 0.5);
  x = b.dense("fc2", x, 64);
  x = b.leaky("act_fc2", x, 0.3);
  x = b.dropout("drop2", x, 0.5);
  x = b.dense("fc3", x, 4);
  b.scaledTanh("output", x, 1.2);
}

#define HYBRID3D_INSTANTIATE(T, D) \
  template void defineCosmoFlowMlperf(Builder<T, D>&, const ModelOptions&);
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_INSTANTIATE)
#undef HYBRID3D_INSTANTIATE
template void defineCosmoFlowMlperf(PlanBuilder&, const ModelOptions&);

}  // namespace hybrid3d::Impl
