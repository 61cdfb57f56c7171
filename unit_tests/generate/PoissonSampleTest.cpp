// The keyed Poisson sampler: right mean and variance on both of its branches (inversion below
// a mean of 10, transformed rejection above).
#include <cmath>
#include <cstdint>

#include <gtest/gtest.h>

#include <hybrid3d/generate/CounterHash.hpp>
#include <hybrid3d/generate/PoissonSample.hpp>

namespace {

using namespace hybrid3d::generate;

TEST(PoissonSample, MeanAndVarianceEqualLambda) {
  const int draws = 40000;
  for (double lambda : {0.3, 4.0, 9.9, 10.0, 37.0, 800.0}) {
    SCOPED_TRACE("lambda " + std::to_string(lambda));
    double sum = 0, sum2 = 0;
    bool nonNegative = true;
    for (int i = 0; i < draws; ++i) {
      const double k = static_cast<double>(poissonDraw(lambda, deriveKey(12345, i)));
      nonNegative = nonNegative && k >= 0;
      sum += k;
      sum2 += k * k;
    }
    const double mean = sum / draws;
    const double var = sum2 / draws - mean * mean;
    EXPECT_TRUE(nonNegative);
    // Five standard errors: the standard error of the mean is sqrt(lambda / n), that of the
    // variance about lambda * sqrt(2 / n) (plus the fourth-cumulant term lambda / n).
    EXPECT_NEAR(mean, lambda, 5 * std::sqrt(lambda / draws));
    EXPECT_NEAR(var, lambda, 5 * std::sqrt((2 * lambda * lambda + lambda) / draws));
  }
}

}  // namespace
