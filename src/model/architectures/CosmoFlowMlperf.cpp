// cosmoflow_mlperf (MLPerf HPC reference, docs/design.md section 6): log1p of the input, five 3^3
// convolutions with bias, LeakyReLU(0.3) and 2^3 max pools, three dense layers, 1.2 tanh;
// regression of the four cosmological parameters.
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/model/Architecture.hpp>
#include <hybrid3d/model/Tasks.hpp>

namespace hybrid3d::architectures {

namespace {

ModelTraits traits(const ModelOptions& o) {
  const int S = o.inputWidth;
  // The dense head fixes the input: a cube of width S (`hybrid3d predict` cuts volumes into them).
  if (o.extents() != Index3{S, S, S})
    fail("model: ", o.architecture, " takes cubes of its input width ", S, " (got ",
         toString(o.extents()), ")");
  if (S < 32 || (S & (S - 1)) != 0)
    fail("model: cosmoflow_mlperf needs an input width that is a power of two >= 32 (got ", S, ")");
  ModelTraits t;
  t.inputChannels = 4;
  t.log1pOfInput = true;
  t.outputs = 4;
  t.task = &regressionTask();
  return t;
}

void define(GraphBuilder& b, const ModelOptions&) {
  const int channels[5] = {32, 64, 128, 256, 512};
  int x = b.log1p("log1p", GraphBuilder::Input);
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

// The reference's (Keras defaults): Glorot uniform weights, zero biases.
std::optional<ParameterInit> initialization(const std::string&, const std::string& parameter,
                                            std::size_t dims) {
  if (parameter == "weight" && (dims == 5 || dims == 2)) return ParameterInit{Init::GlorotUniform};
  if (parameter == "bias") return ParameterInit{Init::Constant, 0.0};
  return std::nullopt;
}

}  // namespace

Architecture CosmoFlowMlperf() { return {"cosmoflow_mlperf", traits, define, initialization}; }

}  // namespace hybrid3d::architectures
