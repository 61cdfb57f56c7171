// unet3d (LBANN 2020, docs/design.md section 6): three encoder blocks with max pools, a bottom
// block, three decoder blocks fed by 2^3 transposed convolutions concatenated with the encoder
// skips, and a 1^3 head with bias producing 3 classes; per-voxel segmentation.
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/model/Architecture.hpp>
#include <hybrid3d/model/Tasks.hpp>

namespace hybrid3d::architectures {

namespace {

ModelTraits traits(const ModelOptions& o) {
  // Any (D,H,W) the three 2^3 pools halve exactly: `hybrid3d predict` pads whole volumes to it.
  const Index3 e = o.extents();
  for (const Index S : e)
    if (S < 8 || S % 8 != 0)
      fail("model: unet3d needs an input width divisible by 8 (got ",
           e[0] == e[1] && e[1] == e[2] ? std::to_string(S) : toString(e), ")");
  ModelTraits t;
  t.inputChannels = 1;
  t.outputs = 3;
  t.task = &segmentationTask();
  return t;
}

// [a, c]: conv -> batch norm -> ReLU -> conv -> batch norm -> ReLU, named <block>_conv1, ...
int block(GraphBuilder& b, const std::string& name, int x, int a, int c) {
  x = b.conv(name + "_conv1", x, a, 3, 1, 1, false);
  x = b.batchNorm(name + "_bn1", x);
  x = b.leaky(name + "_relu1", x, 0.0);
  x = b.conv(name + "_conv2", x, c, 3, 1, 1, false);
  x = b.batchNorm(name + "_bn2", x);
  return b.leaky(name + "_relu2", x, 0.0);
}

void define(GraphBuilder& b, const ModelOptions&) {
  const int enc1 = block(b, "enc1", GraphBuilder::Input, 32, 64);
  const int enc2 = block(b, "enc2", b.maxPool("pool1", enc1), 64, 128);
  const int enc3 = block(b, "enc3", b.maxPool("pool2", enc2), 128, 256);
  int x = block(b, "bottom", b.maxPool("pool3", enc3), 256, 512);
  x = block(b, "dec3", b.concat("cat3", b.up("up3", x, 512), enc3), 256, 256);
  x = block(b, "dec2", b.concat("cat2", b.up("up2", x, 256), enc2), 128, 128);
  x = block(b, "dec1", b.concat("cat1", b.up("up1", x, 128), enc1), 64, 64);
  b.conv("head", x, 3, 1, 1, 0, true);
}

// LBANN's: He normal for convolutions, Glorot uniform for dense weights, zero biases (batch
// norm's too); batch-norm weights keep their own 1.
std::optional<ParameterInit> initialization(const std::string&, const std::string& parameter,
                                            std::size_t dims) {
  if (parameter == "weight" && dims == 5) return ParameterInit{Init::HeNormal};
  if (parameter == "weight" && dims == 2) return ParameterInit{Init::GlorotUniform};
  if (parameter == "bias") return ParameterInit{Init::Constant, 0.0};
  return std::nullopt;
}

}  // namespace

Architecture UNet3d() { return {"unet3d", traits, define, initialization}; }

}  // namespace hybrid3d::architectures
