#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/model/Initializers.hpp>
#include <hybrid3d/model/Models.hpp>

#include "impl/Builder.hpp"
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

ModelTraits modelTraits(const ModelOptions& o) {
  const int S = o.inputWidth;
  if (o.batch < 1) fail("model: batch ", o.batch, " per data-parallel group must be >= 1");
  ModelTraits t;
  if (o.architecture == "cosmoflow") {
    if (!powerOfTwo(S) || S < 16)
      fail("model: cosmoflow needs an input width that is a power of two >= 16 (got ", S, ")");
    t.inputChannels = 4;
    t.outputs = 4;
    t.loss = LossKind::MeanSquaredError;
  } else if (o.architecture == "cosmoflow_mlperf") {
    if (!powerOfTwo(S) || S < 32)
      fail("model: cosmoflow_mlperf needs an input width that is a power of two >= 32 (got ", S, ")");
    t.inputChannels = 4;
    t.log1pOfInput = true;
    t.outputs = 4;
    t.loss = LossKind::MeanSquaredError;
  } else if (o.architecture == "unet3d") {
    if (S < 8 || S % 8 != 0) fail("model: unet3d needs an input width divisible by 8 (got ", S, ")");
    t.inputChannels = 1;
    t.outputs = 3;
    t.loss = LossKind::SoftmaxCrossEntropy;
  } else {
    fail("model: unknown architecture \"", o.architecture,
         "\" (cosmoflow, cosmoflow_mlperf or unet3d)");
  }
  return t;
}

template <class T, class M>
Model<T, M> buildModel(const ProcessGrid& grid, const ModelOptions& o) {
  const ModelTraits traits = modelTraits(o);
  Model<T, M> m;
  m.architecture = o.architecture;
  m.inputChannels = traits.inputChannels;
  m.outputs = traits.outputs;
  m.loss = traits.loss;
  m.log1pOfInput = traits.log1pOfInput;
  const int S = o.inputWidth;
  const TensorShape input{o.batch, m.inputChannels, {S, S, S}};
  m.graph = std::make_unique<Graph<T, M>>(grid, input);
  Impl::Builder<T, M> builder(grid, *m.graph, o);
  Impl::defineModel(builder, o);
  m.graph->finalize();
  initializeModel(*m.graph, o.architecture, o.seed);
  return m;
}

#define HYBRID3D_INSTANTIATE(T, D) \
  template Model<T, D> buildModel<T, D>(const ProcessGrid&, const ModelOptions&);
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_INSTANTIATE)
#undef HYBRID3D_INSTANTIATE

}  // namespace hybrid3d
