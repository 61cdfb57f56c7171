// The pools and batch norm in the 16-bit activation types (bfloat16, float16): against the float
// layer on the same grid and the same inputs (x and dy rounded through the 16-bit type first, so
// both runs read identical values), and against their own 1-rank run (decomposition invariance),
// on the standard grids with an uneven shape. Bounds per element, |got - want| <= rel |want| +
// abs, with u the type's unit roundoff (Scalar16Check.hpp); each is derived where it is used.

#include <gtest/gtest.h>

#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/layers/AvgPool3d.hpp>
#include <hybrid3d/layers/BatchNorm3d.hpp>
#include <hybrid3d/layers/MaxPool3d.hpp>

#include "GridCases.hpp"
#include "LayerRun.hpp"
#include "LayerTensors.hpp"
#include "Scalar16Check.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

template <class T>
class Pool16 : public ::testing::Test {};
using Scalar16Types = ::testing::Types<bfloat16, float16>;
TYPED_TEST_SUITE(Pool16, Scalar16Types);

const TensorShape kShape{2, 3, {7, 6, 9}};  // uneven on every grid of more than one rank

// Samples of this group (its own seeds) and the 1-rank run of the same samples: pools and
// per-group batch statistics do not mix groups, so the 1-rank run is the reference.
struct Inputs {
  GlobalArray<double> x, dy;
};
template <class T>
Inputs inputs(const ProcessGrid& grid, const Index3& outExtents, unsigned seed) {
  return {
      roundedThrough<T>(randomGlobal<double>("x", 2, 3, kShape.extents, seed + grid.group())),
      roundedThrough<T>(randomGlobal<double>("dy", 2, 3, outExtents, seed + 50 + grid.group()))};
}

// Max pooling: 3/2/1 (overlapping windows, padding) and 2/2/0 (tiled, the models' pool).
TYPED_TEST(Pool16, MaxPoolAgreesWithFloatAndWithOneRank) {
  using T = TypeParam;
  const double u = unitRoundoff<T>();
  for (const typename MaxPool3d<T, TestDevice>::Options o :
       {typename MaxPool3d<T, TestDevice>::Options{3, 2, 1}, {2, 2, 0}}) {
    SCOPED_TRACE("kernel " + std::to_string(o.kernel));
    forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
      const Index3 out =
          windowOutputExtents(kShape.extents, Window::cubic(o.kernel, o.stride, o.padding));
      const Inputs in = inputs<T>(grid, out, 11);
      const ForwardBackward got =
          forwardBackward(MaxPool3d<T, TestDevice>(grid, "max", kShape, o), grid, in.x, in.dy);
      const ForwardBackward f = forwardBackward(
          MaxPool3d<float, TestDevice>(grid, "max", kShape, {o.kernel, o.stride, o.padding}), grid,
          in.x, in.dy);
      const ForwardBackward one = forwardBackward(
          MaxPool3d<T, TestDevice>(selfGrid(), "max", kShape, o), selfGrid(), in.x, in.dy);
      // Forward: the maximum is one of the (representable) inputs, compared exactly; the same
      // winner as float's, whatever the grid: equal.
      expectWithin(got.y, f.y, {0, 0}, "output vs float");
      expectWithin(got.y, one.y, {0, 0}, "output vs 1 rank");
      // Backward: dx sums dy over the windows a cell won, at most B = 8 of them (at most 2
      // windows per dimension for stride 2), |partial sums| <= B max|dy|. Float for the sum and
      // for the halo's adjoint adds; each stored partial (the local sum, and after each of at
      // most 3 halo stages) rounded once to T: 4 roundings of at most u B max|dy| each, and
      // float's reordering of B terms (B 2^-24 of the same scale). Tiled windows have one term:
      // then exact.
      const double B = o.kernel > o.stride ? 8 : 1, scale = B * maxAbs(in.dy);
      const Bound dx{u, (4 * u + B * kFloatRoundoff) * scale + subnormalFloor<T>()};
      expectWithin(got.dx, f.dx, o.kernel > o.stride ? dx : Bound{0, 0}, "dx vs float");
      expectWithin(got.dx, one.dx, o.kernel > o.stride ? dx : Bound{0, 0}, "dx vs 1 rank");
    });
  }
}

// Average pooling: 3/2/1 without the padding in the divisor (CosmoFlow's), and 2/2/0.
TYPED_TEST(Pool16, AvgPoolAgreesWithFloatAndWithOneRank) {
  using T = TypeParam;
  const double u = unitRoundoff<T>();
  for (const typename AvgPool3d<T, TestDevice>::Options o :
       {typename AvgPool3d<T, TestDevice>::Options{3, 2, 1, false}, {2, 2, 0, true}}) {
    SCOPED_TRACE("kernel " + std::to_string(o.kernel));
    forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
      const Index3 out =
          windowOutputExtents(kShape.extents, Window::cubic(o.kernel, o.stride, o.padding));
      const Inputs in = inputs<T>(grid, out, 21);
      const ForwardBackward got =
          forwardBackward(AvgPool3d<T, TestDevice>(grid, "avg", kShape, o), grid, in.x, in.dy);
      const ForwardBackward f = forwardBackward(
          AvgPool3d<float, TestDevice>(grid, "avg", kShape,
                                       {o.kernel, o.stride, o.padding, o.countIncludePad}),
          grid, in.x, in.dy);
      const ForwardBackward one = forwardBackward(
          AvgPool3d<T, TestDevice>(selfGrid(), "avg", kShape, o), selfGrid(), in.x, in.dy);
      // Forward: a float sum of at most K^3 = 27 terms times a float reciprocal divisor (three
      // factors), rounded once; float's host kernel sums in another order: |y - y32| <= u |y32|
      // + (2 * 27 + 6) 2^-24 max|x| (the weights of a window sum to at most 1).
      expectWithin(got.y, f.y, {u, 60 * kFloatRoundoff * maxAbs(in.x) + subnormalFloor<T>()},
                   "output vs float");
      // The 16-bit kernel sums a window in one order on every grid (the halo brings the same
      // values): equal to its 1-rank run.
      expectWithin(got.y, one.y, {0, 0}, "output vs 1 rank");
      // Backward: dx sums dy / divisor over at most 8 windows, each divisor >= 8 where windows
      // overlap (3/2/1 without padding counts at least 2 cells a dimension): partial sums
      // <= max|dy|. As max pooling's: four roundings of partial sums and float's reordering.
      const double scale = maxAbs(in.dy);
      const Bound dx{u, (4 * u + 16 * kFloatRoundoff) * scale + subnormalFloor<T>()};
      expectWithin(got.dx, f.dx, dx, "dx vs float");
      expectWithin(got.dx, one.dx, dx, "dx vs 1 rank");
    });
  }
}

// Batch norm in training mode (statistics of the spatial group), two steps (the second shifts
// its sums by the running mean), and one step of inference.
// On host memory batch norm's rows (kernels/HostRows.hpp, AVX2 where the CPU has it) compute as
// float's: the same double sums of the same values, the same float operations per cell, no
// contraction; so the 16-bit output and input gradient are exactly float's rounded once. One
// rank, rows of 37 cells (whole vectors and a tail) and of more cells than one step of the rows'
// float buffers (kFloatChunk), training and inference.
TYPED_TEST(Pool16, BatchNormOnHostIsFloatsRoundedOnce) {
  using T = TypeParam;
  if constexpr (!Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                            typename TestDevice::memory_space>::accessible) {
    GTEST_SKIP() << "host rows only";
  } else {
    for (const TensorShape& shape :
         {TensorShape{2, 3, {3, 4, 37}}, TensorShape{2, 3, {2, 2, Impl::kFloatChunk + 37}}})
      forEachGrid({{{1, 1, 1}, 1}}, [&](const ProcessGrid& grid, const GridCase&) {
        const Inputs in{roundedThrough<T>(randomGlobal<double>("x", 2, 3, shape.extents, 41)),
                        roundedThrough<T>(randomGlobal<double>("dy", 2, 3, shape.extents, 42))};
        BatchNorm3d<T, TestDevice> layer(grid, "bn", shape, {});
        BatchNorm3d<float, TestDevice> flt(grid, "bn", shape, {});
        for (const bool training : {true, false}) {
          SCOPED_TRACE(training ? "training" : "inference");
          layer.setTraining(training);
          flt.setTraining(training);
          const ForwardBackward got = forwardBackward(layer, grid, in.x, in.dy);
          const ForwardBackward f = forwardBackward(flt, grid, in.x, in.dy);
          expectWithin(got.y, roundedThrough<T>(f.y), Bound{}, "output");
          expectWithin(got.dx, roundedThrough<T>(f.dx), Bound{}, "input gradient");
        }
      });
  }
}

TYPED_TEST(Pool16, BatchNormAgreesWithFloatAndWithOneRank) {
  using T = TypeParam;
  const double u = unitRoundoff<T>();
  forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const Inputs in = inputs<T>(grid, kShape.extents, 31);
    typename BatchNorm3d<T, TestDevice>::Options o;
    o.statistics = BatchNorm3d<T, TestDevice>::Statistics::PerSpatialGroup;
    typename BatchNorm3d<float, TestDevice>::Options of;
    of.statistics = BatchNorm3d<float, TestDevice>::Statistics::PerSpatialGroup;
    BatchNorm3d<T, TestDevice> layer(grid, "bn", kShape, o), self(selfGrid(), "bn", kShape, o);
    BatchNorm3d<float, TestDevice> flt(grid, "bn", kShape, of);
    for (int step = 0; step < 3; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      const bool training = step < 2;
      layer.setTraining(training);
      self.setTraining(training);
      flt.setTraining(training);
      const ForwardBackward got = forwardBackward(layer, grid, in.x, in.dy);
      const ForwardBackward f = forwardBackward(flt, grid, in.x, in.dy);
      const ForwardBackward one = forwardBackward(self, selfGrid(), in.x, in.dy);
      // Against float on the same grid: the same double sums of the same values, the same float
      // arithmetic per cell, then one rounding: u |y32|, and 2^-20 of the largest value for
      // float operations the compiler may contract or order otherwise in the other build.
      const Bound vsFloat{u, 0x1p-20 * maxAbs(f.y) + subnormalFloor<T>()};
      expectWithin(got.y, f.y, vsFloat, "output vs float");
      expectWithin(got.dx, f.dx, {u, 0x1p-20 * maxAbs(f.dx) + subnormalFloor<T>()}, "dx vs float");
      // Against the 1-rank run: the double sums in another order move the float statistics by
      // an ulp of float, which can move a rounded value by one ulp of T: 2u |y|.
      expectWithin(got.y, one.y, {2 * u, 0x1p-20 * maxAbs(one.y) + subnormalFloor<T>()},
                   "output vs 1 rank");
      expectWithin(got.dx, one.dx, {2 * u, 0x1p-20 * maxAbs(one.dx) + subnormalFloor<T>()},
                   "dx vs 1 rank");
      // Parameters, gradients and running statistics are float: float's from the same double
      // sums (equal but for float contraction: 2^-20); summed over the spatial group, the 1-rank
      // run's to float's resolution of sums of n terms (1e-5, as FloatTest's float vs double).
      const auto params = layer.parameters(), fparams = flt.parameters(),
                 sparams = self.parameters();
      ASSERT_EQ(params.size(), 2u);
      static_assert(
          std::is_same_v<typename decltype(params)::value_type, Parameter<float, TestDevice>>,
          "float parameters for the 16-bit types");
      for (std::size_t i = 0; i < params.size(); ++i) {
        SCOPED_TRACE(params[i].name);
        const auto g = toHost(params[i].grad);
        EXPECT_LE(maxRelativeError(g, toHost(fparams[i].grad)), 0x1p-20) << "grad vs float";
        Kokkos::View<float*, TestDevice> sum("sum", params[i].grad.size());
        Kokkos::deep_copy(sum, params[i].grad);
        allreduceSum(sum, grid.spatialComm());
        EXPECT_LE(maxRelativeError(toHost(sum), toHost(sparams[i].grad)), 1e-5) << "grad vs 1 rank";
      }
      const auto buffers = layer.buffers(), fbuffers = flt.buffers(), sbuffers = self.buffers();
      for (std::size_t i = 0; i < buffers.size(); ++i) {
        SCOPED_TRACE(buffers[i].name);
        EXPECT_LE(maxRelativeError(toHost(buffers[i].value), toHost(fbuffers[i].value)), 0x1p-20);
        EXPECT_LE(maxRelativeError(toHost(buffers[i].value), toHost(sbuffers[i].value)), 1e-6);
      }
    }
  });
}

}  // namespace
}  // namespace hybrid3d::test
