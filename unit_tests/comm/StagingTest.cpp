// Staging of MPI buffers (core/StagingSpace.hpp) and the allreduce that keeps its staging buffer
// (comm/Allreduce.hpp). The staged path is also run on the host, by forcing Stage, so that its
// copies and offsets are checked on every build, not only on a GPU.
#include <gtest/gtest.h>

#include <type_traits>

#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/StagingSpace.hpp>

#include "GridCases.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {
namespace {

// Host memory is never staged; a device space is staged through host memory MPI can read.
static_assert(std::is_same_v<StagingSpace<Kokkos::HostSpace>, Kokkos::HostSpace>);
static_assert(!mpiStagesThroughHost<Kokkos::HostSpace>);
static_assert(Kokkos::SpaceAccessibility<Kokkos::HostSpace, StagingSpace<TestDevice>>::accessible);
static_assert(Impl::hostAccessible<TestDevice> ==
              std::is_same_v<StagingSpace<TestDevice>, Kokkos::HostSpace>);

TEST(Staging, BufferIsAllocatedOnlyWhereMpiNeedsIt) {
  const auto forced = stagingBuffer<float, TestDevice, true>("forced", 7);
  EXPECT_EQ(forced.size(), 7u);
  const auto needed = stagingBuffer<float, TestDevice>("needed", 7);
  EXPECT_EQ(needed.size(), mpiStagesThroughHost<TestDevice> ? 7u : 0u);
  const auto host = stagingBuffer<float, Kokkos::HostSpace>("host", 7);
  EXPECT_EQ(host.size(), 0u);
}

// v(i) = 100 * salt + 10 * rank + i on every rank: the world sum is known in closed form.
template <class View>
void fillRanked(const View& v, int salt) {
  auto h = Kokkos::create_mirror_view(v);
  double* p = h.data();
  for (std::size_t i = 0; i < h.span(); ++i) p[i] = 100.0 * salt + 10.0 * worldRank() + double(i);
  Kokkos::deep_copy(v, h);
}
template <class View>
void expectRankedSum(const View& v, int salt) {
  const int size = worldSize();
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  const double* p = h.data();
  for (std::size_t i = 0; i < h.span(); ++i)
    EXPECT_EQ(p[i], size * (100.0 * salt + double(i)) + 10.0 * size * (size - 1) / 2)
        << v.label() << " element " << i;
}

template <bool Stage>
void sumsRepeatedlyThroughOneBuffer() {
  using M = TestDevice;
  const typename M::execution_space exec;
  StagedAllreduce<double, M, Stage> sum("test sums", 12);
  const bool staged = Stage;
  EXPECT_EQ(sum.staging().size(), staged ? 12u : 0u);
  const double* buffer = sum.staging().data();
  // A 2-D view at full capacity and a shorter 1-D one, in turns, as layers of several sizes.
  Kokkos::View<double**, Kokkos::LayoutRight, M> matrix("matrix", 3, 4);
  Kokkos::View<double*, M> vector("vector", 5);
  for (int call = 0; call < 3; ++call) {
    fillRanked(matrix, 2 * call);
    fillRanked(vector, 2 * call + 1);
    sum(exec, matrix, MPI_COMM_WORLD);
    sum(exec, vector, MPI_COMM_WORLD);
    exec.fence();
    expectRankedSum(matrix, 2 * call);
    expectRankedSum(vector, 2 * call + 1);
    EXPECT_EQ(sum.staging().data(), buffer) << "the staging buffer was reallocated";
  }
}

TEST(StagedAllreduce, SumsOverTheWorldThroughTheBufferItKeeps) {
  sumsRepeatedlyThroughOneBuffer<mpiStagesThroughHost<TestDevice>>();
}

TEST(StagedAllreduce, StagedThroughHostBuffersTheSumsAreTheSame) {
  sumsRepeatedlyThroughOneBuffer<true>();
}

TEST(StagedAllreduce, AViewLargerThanItWasSetUpForIsAnErrorNamingBoth) {
  StagedAllreduce<double, TestDevice, true> sum("bn1 sums", 4);
  Kokkos::View<double*, TestDevice> big("bn1 big", 5);
  try {
    sum(typename TestDevice::execution_space(), big, MPI_COMM_WORLD);
    FAIL() << "no error for 5 elements in a 4-element allreduce";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'bn1 big' has 5 elements"), std::string::npos) << what;
    EXPECT_NE(what.find("the 4 that 'bn1 sums'"), std::string::npos) << what;
  }
}

TEST(StagedAllreduce, TheOneOffSumReturnsWithTheSum) {
  Kokkos::View<double*, TestDevice> v("one-off", 9);
  fillRanked(v, 7);
  allreduceSum(v, MPI_COMM_WORLD);
  expectRankedSum(v, 7);
}

}  // namespace
}  // namespace hybrid3d::test
