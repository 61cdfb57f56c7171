#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/model/Initializers.hpp>
#include <hybrid3d/model/Models.hpp>

#include "impl/ModelBuilders.hpp"

namespace hybrid3d {

namespace {

bool powerOfTwo(int s) { return s > 0 && (s & (s - 1)) == 0; }

// LBANN's CosmoFlow and U-Net: He normal for convolutions, Glorot uniform for dense weights,
// fc biases 0.1 in cosmoflow; the MLPerf reference (Keras): Glorot uniform, zero biases.
// Batch-norm layers keep their own (1, 0) initialisation.
template <class T, class M>
void initializeModel(const Graph<T, M>& g, const std::string& arch, std::uint64_t seed) {
  for (const auto& np : g.parameters()) {
    const auto& p = np.param;
    const bool conv = p.shape.size() == 5, dense = p.shape.size() == 2;
    const bool bias = p.name == "bias";
    if (p.name == "weight" && conv)
      initialize(p, arch == "cosmoflow_mlperf" ? Init::GlorotUniform : Init::HeNormal, seed, np.layer);
    else if (p.name == "weight" && dense)
      initialize(p, Init::GlorotUniform, seed, np.layer);
    else if (bias && arch == "cosmoflow" && np.layer.rfind("fc", 0) == 0)
      initialize(p, Init::Constant, seed, np.layer, 0.1);
    else if (bias)
      initialize(p, Init::Constant, seed, np.layer, 0.0);
  }
}

}  // namespace

template <class T, class M>
Model<T, M> buildModel(const ProcessGrid& grid, const ModelOptions& o) {
  const int S = o.inputWidth;
  if (o.batch < 1) fail("model: batch ", o.batch, " per data-parallel group must be >= 1");
  Model<T, M> m;
  m.architecture = o.architecture;
  if (o.architecture == "cosmoflow") {
    if (!powerOfTwo(S) || S < 16)
      fail("model: cosmoflow needs an input width that is a power of two >= 16 (got ", S, ")");
    m.inputChannels = 4;
    m.outputs = 4;
    m.loss = LossKind::MeanSquaredError;
  } else if (o.architecture == "cosmoflow_mlperf") {
    if (!powerOfTwo(S) || S < 32)
      fail("model: cosmoflow_mlperf needs an input width that is a power of two >= 32 (got ", S, ")");
    m.inputChannels = 4;
    m.log1pOfInput = true;
    m.outputs = 4;
    m.loss = LossKind::MeanSquaredError;
  } else if (o.architecture == "unet3d") {
    if (S < 8 || S % 8 != 0) fail("model: unet3d needs an input width divisible by 8 (got ", S, ")");
    m.inputChannels = 1;
    m.outputs = 3;
    m.loss = LossKind::SoftmaxCrossEntropy;
  } else {
    fail("model: unknown architecture \"", o.architecture,
         "\" (cosmoflow, cosmoflow_mlperf or unet3d)");
  }
  const TensorShape input{o.batch, m.inputChannels, {S, S, S}};
  m.graph = std::make_unique<Graph<T, M>>(grid, input);
  if (o.architecture == "cosmoflow") Impl::buildCosmoFlow(grid, *m.graph, o);
  if (o.architecture == "cosmoflow_mlperf") Impl::buildCosmoFlowMlperf(grid, *m.graph, o);
  if (o.architecture == "unet3d") Impl::buildUNet3d(grid, *m.graph, o);
  m.graph->finalize();
  initializeModel(*m.graph, o.architecture, o.seed);
  return m;
}

template Model<float, DefaultMemorySpace> buildModel<float, DefaultMemorySpace>(const ProcessGrid&,
                                                                                const ModelOptions&);
template Model<double, DefaultMemorySpace> buildModel<double, DefaultMemorySpace>(
    const ProcessGrid&, const ModelOptions&);

}  // namespace hybrid3d
