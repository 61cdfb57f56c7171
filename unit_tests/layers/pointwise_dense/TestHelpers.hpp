#pragma once
// Small host/device helpers for the point-wise and dense layer tests.

#include <algorithm>
#include <random>
#include <string>

#include <Kokkos_Core.hpp>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>

#include "TestDevice.hpp"

namespace hybrid3d::test {

// A flat host copy of any contiguous device view.
template <class V>
Kokkos::View<double*, Kokkos::HostSpace> hostCopy(const V& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  Kokkos::View<double*, Kokkos::HostSpace> out(std::string(v.label()) + " host", h.size());
  std::copy(h.data(), h.data() + h.size(), out.data());
  return out;
}

// Fill a contiguous device view from a host buffer of the same size.
template <class V, class H>
void fillFrom(const V& v, const H& host) {
  auto h = Kokkos::create_mirror_view(v);
  std::copy(host.data(), host.data() + h.size(), h.data());
  Kokkos::deep_copy(v, h);
}

// A [N, F] feature view with uniform random values in [-1, 1).
inline FeatureView<double, TestDevice> randomFeatures(const std::string& label, Index n, Index f,
                                                      unsigned seed) {
  FeatureView<double, TestDevice> v(label, n, f);
  auto h = Kokkos::create_mirror_view(v);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (std::size_t i = 0; i < h.size(); ++i) h.data()[i] = u(rng);
  Kokkos::deep_copy(v, h);
  return v;
}

// Rows [first, first + count) of a feature view, as a new view.
inline FeatureView<double, TestDevice> rows(const FeatureView<double, TestDevice>& v, Index first,
                                            Index count) {
  FeatureView<double, TestDevice> r(v.label(), count, v.extent(1));
  Kokkos::deep_copy(
      r, Kokkos::subview(v, Kokkos::pair<Index, Index>(first, first + count), Kokkos::ALL));
  return r;
}

}  // namespace hybrid3d::test
