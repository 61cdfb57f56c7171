#pragma once
// Helpers for decomposition-invariance and reference tests: deterministic random global
// arrays (the same on every rank), a 1-rank grid to compute the reference on, and a
// max-relative-error comparison of global arrays.
//
// Pattern: build the global input on every rank, scatterFromGlobal into the DistTensor of the
// grid under test, run, gatherToGlobal the results; run the same layer on selfGrid() with the
// whole array; compare with expectSameArray.

#include <cmath>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/layers/Parameter.hpp>

namespace hybrid3d::test {

template <class T>
GlobalArray<T> randomGlobal(const std::string& label, int n, int c, const Index3& e, unsigned seed,
                            double lo = -1.0, double hi = 1.0) {
  GlobalArray<T> a(label, n, c, e[0], e[1], e[2]);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<T>(u(rng));
  return a;
}

// The same array in another scalar type (float runs against double references).
template <class U, class T>
GlobalArray<U> convertGlobal(const GlobalArray<T>& a) {
  GlobalArray<U> b(a.label(), a.extent(0), a.extent(1), a.extent(2), a.extent(3), a.extent(4));
  for (std::size_t i = 0; i < a.size(); ++i) b.data()[i] = static_cast<U>(a.data()[i]);
  return b;
}

// The (batch, channels, extents) a layer takes for the global array `a`.
template <class T>
TensorShape shapeOf(const GlobalArray<T>& a) {
  return {int(a.extent(0)),
          int(a.extent(1)),
          {Index(a.extent(2)), Index(a.extent(3)), Index(a.extent(4))}};
}

// A 1x1x1 grid of this rank alone: the reference every decomposition must reproduce.
inline ProcessGrid& selfGrid() {
  static ProcessGrid grid(MPI_COMM_SELF, {1, 1, 1});
  return grid;
}

// max |got - want| / max |want| over all elements (0 when both are all zero), for any two
// contiguous arrays of one size (views, vectors).
template <class Got, class Want>
double maxRelativeError(const Got& got, const Want& want) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, std::abs(double(got.data()[i]) - double(want.data()[i])));
    scale = std::max(scale, std::abs(double(want.data()[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

template <class View>
void expectSameArray(const View& got, const View& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double err = maxRelativeError(got, want);
  EXPECT_LE(err, tol) << what << ": max relative error " << err;
}

}  // namespace hybrid3d::test
