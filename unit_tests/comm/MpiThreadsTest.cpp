#include <gtest/gtest.h>

#include <mpi.h>

#include <hybrid3d/core/MpiThreads.hpp>

namespace hybrid3d::test {
namespace {

// The test main starts MPI as the command does (core/MpiThreads.hpp): with MPI_Init, Open MPI
// gives MPI_THREAD_SINGLE and this fails.
TEST(MpiThreads, MpiWasStartedWithTheThreadLevelHybrid3dNeeds) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  EXPECT_GE(provided, requiredMpiThreadLevel)
      << "provided " << mpiThreadLevelName(provided) << ", needed "
      << mpiThreadLevelName(requiredMpiThreadLevel);
  int isMain = 0;
  MPI_Is_thread_main(&isMain);
  EXPECT_TRUE(isMain) << "the tests run on the thread that initialised MPI";
}

TEST(MpiThreads, LevelsAreNamedAsInTheStandard) {
  EXPECT_STREQ(mpiThreadLevelName(MPI_THREAD_FUNNELED), "MPI_THREAD_FUNNELED");
  EXPECT_STREQ(mpiThreadLevelName(MPI_THREAD_MULTIPLE), "MPI_THREAD_MULTIPLE");
  EXPECT_STREQ(mpiThreadLevelName(MPI_THREAD_SINGLE), "MPI_THREAD_SINGLE");
}

}  // namespace
}  // namespace hybrid3d::test
