// unet3d (LBANN 2020, DESIGN.md section 6): three encoder blocks with max pools, a bottom
// block, three decoder blocks fed by 2^3 transposed convolutions concatenated with the encoder
// skips, and a 1^3 head with bias producing 3 classes.
#include <hybrid3d/core/Devices.hpp>

#include "impl/Builder.hpp"
#include "impl/ModelBuilders.hpp"
#include "impl/PlanBuilder.hpp"

namespace hybrid3d::Impl {

namespace {

// [a, b]: conv -> batch norm -> ReLU -> conv -> batch norm -> ReLU, named <block>_conv1, ...
template <class B>
int block(B& b, const std::string& name, int x, int a, int c) {
  x = b.conv(name + "_conv1", x, a, 3, 1, 1, false);
  x = b.batchNorm(name + "_bn1", x);
  x = b.leaky(name + "_relu1", x, 0.0);
  x = b.conv(name + "_conv2", x, c, 3, 1, 1, false);
  x = b.batchNorm(name + "_bn2", x);
  return b.leaky(name + "_relu2", x, 0.0);
}

}  // namespace

template <class B>
void defineUNet3d(B& b, const ModelOptions&) {
  const int enc1 = block(b, "enc1", B::Input, 32, 64);
  const int enc2 = block(b, "enc2", b.maxPool("pool1", enc1), 64, 128);
  const int enc3 = block(b, "enc3", b.maxPool("pool2", enc2), 128, 256);
  int x = block(b, "bottom", b.maxPool("pool3", enc3), 256, 512);
  x = block(b, "dec3", b.concat("cat3", b.up("up3", x, 512), enc3), 256, 256);
  x = block(b, "dec2", b.concat("cat2", b.up("up2", x, 256), enc2), 128, 128);
  x = block(b, "dec1", b.concat("cat1", b.up("up1", x, 128), enc1), 64, 64);
  b.conv("head", x, 3, 1, 1, 0, true);
}

#define HYBRID3D_INSTANTIATE(T, D) \
  template void defineUNet3d(Builder<T, D>&, const ModelOptions&);
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_INSTANTIATE)
#undef HYBRID3D_INSTANTIATE
template void defineUNet3d(PlanBuilder&, const ModelOptions&);

}  // namespace hybrid3d::Impl
