#include <gtest/gtest.h>

#include <hybrid3d/comm/GradientReducer.hpp>

#include "GridCases.hpp"

namespace hybrid3d::test {
namespace {

TEST(GradientReducer, EveryGradientEndsAsTheWorldSumWhateverTheStartOrder) {
  const int rank = worldRank(), size = worldSize();
  using V = Kokkos::View<double*, DefaultMemorySpace>;
  std::vector<std::vector<V>> layers = {{V("a", 5), V("b", 3)}, {V("c", 7)}, {V("d", 1), V("e", 2)}};
  auto fill = [&](const V& v, int salt) {
    auto h = Kokkos::create_mirror_view(v);
    for (std::size_t i = 0; i < h.size(); ++i) h(i) = salt * 100 + rank * 10 + double(i);
    Kokkos::deep_copy(v, h);
  };
  int salt = 0;
  for (auto& l : layers)
    for (auto& v : l) fill(v, ++salt);
  {
    GradientReducer<double> reducer(MPI_COMM_WORLD, layers);
    for (std::size_t l : {2u, 0u, 1u}) reducer.start(l);  // backward order: last layer first
    reducer.finish();
  }
  salt = 0;
  for (auto& l : layers)
    for (auto& v : l) {
      ++salt;
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
      for (std::size_t i = 0; i < h.size(); ++i)  // sum over ranks r of salt*100 + 10 r + i
        EXPECT_EQ(h(i), size * (salt * 100 + double(i)) + 10.0 * size * (size - 1) / 2);
    }
}

}  // namespace
}  // namespace hybrid3d::test
