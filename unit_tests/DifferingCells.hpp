#pragma once
// Bit-for-bit comparison of two views, for tests of kernels that must keep the same bits as
// another form of themselves (NaN payloads and signed zeros included, which == would miss).

#include <cstddef>
#include <cstring>

#include <Kokkos_Core.hpp>

namespace hybrid3d::test {

// How many cells of a and b (same span, contiguous) differ in any bit.
template <class V>
std::size_t differingCells(const V& a, const V& b) {
  const auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
  const auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < ha.span(); ++i)
    differ += std::memcmp(ha.data() + i, hb.data() + i, sizeof(*ha.data())) != 0;
  return differ;
}

}  // namespace hybrid3d::test
