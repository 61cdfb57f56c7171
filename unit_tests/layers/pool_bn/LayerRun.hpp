#pragma once
// Helpers shared by the pooling and batch-norm tests: the loss <dy, y> for finite differences,
// host copies, and checking that a configuration error is one line naming the layer.

#include <string>

#include <gtest/gtest.h>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/layers/Parameter.hpp>

#include "Invariance.hpp"

namespace hybrid3d::test {

inline double dot(const GlobalArray<double>& a, const GlobalArray<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a.data()[i] * b.data()[i];
  return s;
}

template <class View>
auto toHost(const View& v) {
  return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
}

// f() must throw hybrid3d::Error with a one-line message that contains `layer`.
template <class F>
void expectLayerError(F&& f, const std::string& layer, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(layer), std::string::npos)
        << what << ": message does not name " << layer << ": " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << what << ": message is not one line: " << m;
  }
}

}  // namespace hybrid3d::test
