// cosmoflow (LBANN 2020, docs/design.md section 6): seven 3^3 convolutions with LeakyReLU(0.01),
// average pools while the volume is at least 4 wide, three dense layers with dropout; regression
// of the four cosmological parameters.
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
  if (S < 16 || (S & (S - 1)) != 0)
    fail("model: cosmoflow needs an input width that is a power of two >= 16 (got ", S, ")");
  ModelTraits t;
  t.inputChannels = 4;
  t.outputs = 4;
  t.task = &regressionTask();
  return t;
}

void define(GraphBuilder& b, const ModelOptions& o) {
  const int channels[7] = {16, 32, 64, 128, 256, 256, 256};
  const int S = o.inputWidth;
  int x = GraphBuilder::Input;
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

// LBANN's: He normal for convolutions, Glorot uniform for dense weights, fc biases 0.1.
std::optional<ParameterInit> initialization(const std::string& layer, const std::string& parameter,
                                            std::size_t dims) {
  if (parameter == "weight" && dims == 5) return ParameterInit{Init::HeNormal};
  if (parameter == "weight" && dims == 2) return ParameterInit{Init::GlorotUniform};
  if (parameter == "bias")
    return ParameterInit{Init::Constant, layer.rfind("fc", 0) == 0 ? 0.1 : 0.0};
  return std::nullopt;
}

}  // namespace

Architecture CosmoFlow() { return {"cosmoflow", traits, define, initialization}; }

}  // namespace hybrid3d::architectures
