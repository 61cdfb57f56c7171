// Why a 16-bit model's parameter gradients are O(sqrt(u)) from float's (normwise) where its
// activations are O(u) (issue 38, point 6; the bounds of model/MixedPrecisionModelTest.cpp).
//
// The operation: a LeakyReLU's backward, dx = dy * (z > 0 ? 1 : slope), after the sum of
// products z = sum_j w_j x_j that produced its input (a convolution's, a dense layer's). Each
// run stores x in its own type, so z's of two types differ by about u sum_j |w_j x_j| (u the
// coarser type's unit roundoff): an error relative to the terms, not to z. Where z is that close
// to 0 its sign differs between the runs and the derivative jumps between 1 and the slope: dx
// at that cell is wrong by (1 - slope) |dy|, all of dy, whatever u. Such cells make a fraction
// f proportional to u (the density of z at 0 times the width of the band), so dx's normwise
// error is about sqrt(f) |dy| / |dx|, proportional to sqrt(u): in units of u it grows as the
// type gets finer (1/sqrt(u): 16 for bfloat16, 45 for half). Everything else is one rounding.
//
// The test isolates it on a dense layer followed by LeakyReLU(0.01), on values of the kind the
// CosmoFlow model sees (x the previous LeakyReLU's outputs, He-normal weights, sums as long as a
// 3^3 convolution's over 64 channels), each type against double (W and dy the same values, x
// rounded to each type). It checks that every cell whose sign flipped has |z| within the sum's
// error bound, that the flipped cells carry dx's whole error but one rounding, that bfloat16
// flips more cells than half and half more than float, and that dx's error per sqrt(u) agrees
// between bfloat16 and half (so per u it is larger in half). No kernel change can remove the
// flips: the 16-bit run's gradient is the exact gradient of its own rounded forward.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/layers/Activation.hpp>
#include <hybrid3d/layers/Dense.hpp>

#include "Invariance.hpp"
#include "TestDevice.hpp"
#include "TestHelpers.hpp"
#include "WorldRank.hpp"
#include "layers/pool_bn/Scalar16Check.hpp"

namespace hybrid3d::test {
namespace {

using Exec = TestExecSpace;
using Host = Kokkos::View<double*, Kokkos::HostSpace>;

constexpr int kSamples = 128, kOut = 1024, kIn = 27 * 64;
constexpr double kSlope = 0.01;  // CosmoFlow's

// What the test draws once: x (a LeakyReLU's outputs of unit normal inputs), W (He normal, as
// float values), dy (magnitudes in [1/4, 1), random signs, exact in bfloat16 and so in every
// type).
struct Draws {
  std::vector<double> x, w, dy;
};

Draws draw() {
  std::mt19937_64 rng(38);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> magnitude(0.25, 1.0);
  Draws d;
  for (int i = 0; i < kSamples * kIn; ++i) {
    const double v = normal(rng);
    d.x.push_back(v > 0 ? v : kSlope * v);
  }
  const double he = std::sqrt(2.0 / kIn);
  for (int i = 0; i < kOut * kIn; ++i) d.w.push_back(double(float(he * normal(rng))));
  for (int i = 0; i < kSamples * kOut; ++i) {
    const double v = (rng() & 1 ? 1 : -1) * magnitude(rng);
    d.dy.push_back(double(float(bfloat16(float(v)))));
  }
  return d;
}

template <class T>
FeatureView<T, TestDevice> featuresIn(const std::vector<double>& v, Index n, Index f) {
  FeatureView<T, TestDevice> out("v", n, f);
  auto h = Kokkos::create_mirror_view(out);
  for (std::size_t i = 0; i < v.size(); ++i) h.data()[i] = T(ComputeOf<T>(v[i]));
  Kokkos::deep_copy(out, h);
  return out;
}

struct KinkRun {
  Host z, dx;
};

// z := x W^T by Dense<T> (float weights and sums for the 16-bit types), then LeakyReLU<T>'s
// backward of dy at z.
template <class T>
KinkRun runKink(const ProcessGrid& grid, const Draws& d) {
  Dense<T, TestDevice> dense(grid, "fc", {kSamples, kIn, {1, 1, 1}}, {kOut, false});
  fillFrom(dense.weight().value, std::vector<ParamOf<T>>(d.w.begin(), d.w.end()));
  const LeakyReLU<T, TestDevice> act(grid, "act", {kSamples, kOut, {1, 1, 1}}, {kSlope});
  const auto x = featuresIn<T>(d.x, kSamples, kIn), dy = featuresIn<T>(d.dy, kSamples, kOut);
  const FeatureView<T, TestDevice> z("z", kSamples, kOut), dx("dx", kSamples, kOut);
  dense.forward(Exec(), x, z);
  act.backward(Exec(), z, dy, dx);
  return {hostCopy(z), hostCopy(dx)};
}

// Against the double run: the cells whose sign of z differs and dx's normwise relative errors.
struct KinkErrors {
  std::size_t flips = 0;
  double error = 0;      // |dx - dx64| / |dx64| over all cells
  double flipped = 0;    // (1 - slope) |dy over the flipped cells| / |dx64|: what they explain
  double unflipped = 0;  // the error over the other cells alone
};

// |z_T - z64| <= (u + gamma_K) M + u |z_T| / (1 - u) + eta sum_j |w_j|, M = sum_j |w_j x_j|:
// x rounded to T (u |x_j| each, or eta = 2^-25 in half's subnormal range), the float sum
// (gamma_K with float's roundoff), z rounded to T. A sign can differ only where |z64| is within
// that bound.
template <class T>
double sumErrorBound(const Draws& d, Index n, Index o, double zT) {
  const double u = unitRoundoff<T>(), gamma = kIn * kFloatRoundoff / (1 - kIn * kFloatRoundoff);
  double M = 0, W = 0;
  for (Index j = 0; j < kIn; ++j) {
    const double w = d.w[std::size_t(o * kIn + j)];
    M += std::abs(w * d.x[std::size_t(n * kIn + j)]);
    W += std::abs(w);
  }
  return (u + gamma) * M + u * std::abs(zT) / (1 - u) + subnormalFloor<T>() * W;
}

template <class T>
KinkErrors compare(const KinkRun& got, const KinkRun& want, const Draws& d) {
  KinkErrors e;
  double total2 = 0, flipped2 = 0, unflipped2 = 0, norm2 = 0;
  for (Index n = 0; n < kSamples; ++n)
    for (Index o = 0; o < kOut; ++o) {
      const std::size_t i = std::size_t(n * kOut + o);
      const double z = got.z(i), z64 = want.z(i), dy = d.dy[i];
      const double diff2 = (got.dx(i) - want.dx(i)) * (got.dx(i) - want.dx(i));
      norm2 += want.dx(i) * want.dx(i);
      total2 += diff2;
      if ((z > 0) == (z64 > 0)) {
        unflipped2 += diff2;
        continue;
      }
      ++e.flips;
      flipped2 += (1 - kSlope) * (1 - kSlope) * dy * dy;
      EXPECT_LE(std::abs(z64), sumErrorBound<T>(d, n, o, z))
          << "the sign flipped at sample " << n << " output " << o << " outside the sum's error";
    }
  e.error = std::sqrt(total2 / norm2);
  e.flipped = std::sqrt(flipped2 / norm2);
  e.unflipped = std::sqrt(unflipped2 / norm2);
  return e;
}

template <class T>
void print(const char* type, const KinkErrors& e) {
  const double u = unitRoundoff<T>(), cells = double(kSamples) * kOut;
  std::printf(
      "  %-8s sign flips %4zu of %.0f (%.2e = %.2f u), dx error %.2e = %.2f u = %.2f "
      "sqrt(u); flipped cells explain %.2e, the others %.2e\n",
      type, e.flips, cells, e.flips / cells, e.flips / cells / u, e.error, e.error / u,
      e.error / std::sqrt(u), e.flipped, e.unflipped);
}

// A 16-bit type: its flips are the whole error but one rounding.
template <class T>
void expectFlipsCarryTheError(const char* type, const KinkErrors& e) {
  SCOPED_TRACE(type);
  // One rounding of the same product dy * derivative on a cell whose sign agreed; on a flipped
  // cell the difference is (1 - slope) |dy| within that rounding, relative delta.
  const double rounding = unitRoundoff<T>() + 0x1p-20, delta = rounding / (1 - kSlope);
  EXPECT_GT(e.flips, 0u) << "no sign flipped: the test would show nothing";
  EXPECT_LE(e.unflipped, rounding);
  EXPECT_GE(e.error, e.flipped * (1 - delta));
  EXPECT_LE(e.error, std::hypot(e.flipped * (1 + delta), e.unflipped));
  EXPECT_GT(e.flipped, e.unflipped) << "the flips should carry most of the error";
}

// One layer on one rank: at more ranks the others would only wait (and poll) for it.
TEST(LeakyReluKink, SignFlipsNearZeroCarryTheSixteenBitGradientError) {
  if (worldSize() != 1) GTEST_SKIP() << "runs at 1 rank only (one layer on one rank)";
  const ProcessGrid& grid = selfGrid();
  const Draws d = draw();
  const KinkRun want = runKink<double>(grid, d);
  const KinkErrors f = compare<float>(runKink<float>(grid, d), want, d);
  const KinkErrors b = compare<bfloat16>(runKink<bfloat16>(grid, d), want, d);
  const KinkErrors h = compare<float16>(runKink<float16>(grid, d), want, d);
  print<float>("float", f);
  print<bfloat16>("bfloat16", b);
  print<float16>("half", h);
  expectFlipsCarryTheError<bfloat16>("bfloat16", b);
  expectFlipsCarryTheError<float16>("half", h);
  // The flipped fraction follows u: more flips in bfloat16 than in half, more in half than in
  // float; so the error follows sqrt(u), larger in units of u for the finer type.
  EXPECT_GT(b.flips, h.flips);
  EXPECT_GT(h.flips, f.flips);
  const double ub = unitRoundoff<bfloat16>(), uh = unitRoundoff<float16>();
  EXPECT_GT(h.error / uh, b.error / ub);
  // error / sqrt(u) the same for both within a factor 2: the flip counts (tens, Poisson) vary
  // by their square root around f N.
  const double perRootU = (h.error / std::sqrt(uh)) / (b.error / std::sqrt(ub));
  EXPECT_GT(perRootU, 0.5);
  EXPECT_LT(perRootU, 2.0);
}

}  // namespace
}  // namespace hybrid3d::test
