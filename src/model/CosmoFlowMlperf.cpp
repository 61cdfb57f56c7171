// cosmoflow_mlperf (MLPerf HPC reference, DESIGN.md section 6): log1p of the input, five 3^3
// convolutions with bias, LeakyReLU(0.3) and 2^3 max pools, three dense layers, 1.2 tanh.
#include "impl/Builder.hpp"
#include "impl/ModelBuilders.hpp"

namespace hybrid3d::Impl {

template <class T, class M>
void buildCosmoFlowMlperf(const ProcessGrid& grid, Graph<T, M>& g, const ModelOptions& o) {
  Builder<T, M> b(grid, g, o);
  const int channels[5] = {32, 64, 128, 256, 512};
  int x = b.log1p("log1p", Graph<T, M>::Input);
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

template void buildCosmoFlowMlperf<float, DefaultMemorySpace>(const ProcessGrid&, Graph<float>&,
                                                              const ModelOptions&);
template void buildCosmoFlowMlperf<double, DefaultMemorySpace>(const ProcessGrid&, Graph<double>&,
                                                               const ModelOptions&);

}  // namespace hybrid3d::Impl
