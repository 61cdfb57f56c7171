// The vendor engines' size limit (engines/ConvEngine.hpp): no operand beyond 32-bit indexing
// reaches oneDNN or cuDNN; auto takes the kokkos engine there and says so, a vendor engine asked
// by name is refused naming the layer and the limit.
#include <string>

#include <gtest/gtest.h>

#include <hybrid3d/engines/ConvEngine.hpp>

namespace hybrid3d::test {
namespace {

using Host = Kokkos::HostSpace;
constexpr Index limit = vendorConvMaxElements;

TEST(ConvEngineLimits, TheLimitIsThirtyTwoBitIndexing) { EXPECT_EQ(limit, (Index(1) << 31) - 1); }

TEST(ConvEngineLimits, LargestOperandCountsChannelsInBlocksOfSixteen) {
  // 2 samples; input 3 channels (a block of 16) x 1000 voxels, output 20 (two blocks) x 10.
  EXPECT_EQ(largestConvOperand(2, 3, 20, 1000, 10), 2 * 16 * 1000);
  EXPECT_EQ(largestConvOperand(2, 3, 20, 10, 1000), 2 * 32 * 1000);
  EXPECT_EQ(largestConvOperand(0, 3, 20, 10, 1000), 0);
  // CosmoFlow conv1 on one rank of a 2048^3 input: 4 channels, ghosted box 2050^3.
  const Index in = Index(2050) * 2050 * 2050, out = Index(2048) * 2048 * 2048;
  EXPECT_EQ(largestConvOperand(1, 4, 16, in, out), 16 * in);
  EXPECT_GT(largestConvOperand(1, 4, 16, in, out), limit);
}

TEST(ConvEngineLimits, AutoTakesKokkosBeyondTheLimitAndSaysSo) {
  const ConvEngine vendor = HYBRID3D_ENABLE_ONEDNN ? ConvEngine::OneDnn : ConvEngine::Kokkos;
  EXPECT_EQ((resolveConvEngine<float, Host>(ConvEngine::Auto, "conv1", 4096, limit)), vendor);
  EXPECT_EQ((resolveConvEngine<float, Host>(ConvEngine::Auto, "conv1", 4096, limit + 1)),
            ConvEngine::Kokkos);
  EXPECT_EQ((resolveConvEngine<bfloat16, Host>(ConvEngine::Auto, "conv1", 4096, limit + 1)),
            ConvEngine::Kokkos);
  // The report's flag: set only where a vendor engine would have run but for the limit.
  EXPECT_EQ((autoBeyondVendorLimit<float, Host>(ConvEngine::Auto, 4096, limit + 1)),
            bool(HYBRID3D_ENABLE_ONEDNN));
  EXPECT_FALSE((autoBeyondVendorLimit<float, Host>(ConvEngine::Auto, 4096, limit)));
  EXPECT_FALSE((autoBeyondVendorLimit<float, Host>(ConvEngine::Auto, 8, limit + 1)));  // small box
  EXPECT_FALSE((autoBeyondVendorLimit<double, Host>(ConvEngine::Auto, 4096, limit + 1)));
  EXPECT_FALSE((autoBeyondVendorLimit<float, Host>(ConvEngine::Kokkos, 4096, limit + 1)));
}

TEST(ConvEngineLimits, ThePlanCountsOneDnnWhereAutoMayTimeIt) {
  // Auto builds (or reserves) the onednn engine wherever oneDNN is a candidate: not beyond the
  // limit, not for double; a named engine holds only itself.
  const bool built = HYBRID3D_ENABLE_ONEDNN;
  EXPECT_EQ((convMayHoldOneDnn<float, Host>(ConvEngine::Auto, limit)), built);
  EXPECT_EQ((convMayHoldOneDnn<bfloat16, Host>(ConvEngine::Auto, 8)), built);
  EXPECT_FALSE((convMayHoldOneDnn<float, Host>(ConvEngine::Auto, limit + 1)));
  EXPECT_FALSE((convMayHoldOneDnn<double, Host>(ConvEngine::Auto, 8)));
  EXPECT_TRUE((convMayHoldOneDnn<float, Host>(ConvEngine::OneDnn, 8)));
  EXPECT_FALSE((convMayHoldOneDnn<float, Host>(ConvEngine::Kokkos, 8)));
}

TEST(ConvEngineLimits, KokkosTakesAnySize) {
  EXPECT_EQ((resolveConvEngine<float, Host>(ConvEngine::Kokkos, "conv1", 4096, limit * 64)),
            ConvEngine::Kokkos);
}

#if HYBRID3D_ENABLE_ONEDNN
TEST(ConvEngineLimits, OneDnnByNameIsRefusedBeyondTheLimitNamingLayerAndLimit) {
  EXPECT_EQ((resolveConvEngine<float, Host>(ConvEngine::OneDnn, "conv1", 4096, limit)),
            ConvEngine::OneDnn);
  try {
    resolveConvEngine<float, Host>(ConvEngine::OneDnn, "conv1", 4096, limit + 1);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("conv1: convolution engine onednn indexes an operand with 32-bit "
                        "integers: this rank's largest has " +
                        std::to_string(limit + 1) + " elements, above its limit of " +
                        std::to_string(limit)),
              std::string::npos)
        << what;
  }
}
#endif

}  // namespace
}  // namespace hybrid3d::test
