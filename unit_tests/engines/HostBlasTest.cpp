// The host BLAS's threads follow Kokkos unless the user chose a count, and the start-up report
// names the library, its kernels and its threads (engines/HostBlas.hpp). OpenBLAS only: with
// another BLAS behind libblas.so.3 the tests say so and skip.
#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include <KokkosBlas3_gemm.hpp>
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include <hybrid3d/engines/HostBlas.hpp>

namespace {

using GetThreads = int (*)();
using SetThreads = void (*)(int);

// The BLAS library is loaded only in a process that calls it (the linker drops unused
// libraries): a host GEMM, as the layers run, makes sure it is.
void hostGemm() {
  Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace> a("a", 2, 2), c("c", 2, 2);
  Kokkos::deep_copy(a, 1.0f);
  KokkosBlas::gemm("N", "N", 1.0f, a, a, 0.0f, c);
}

struct OpenBlas {
  OpenBlas() { hostGemm(); }
  GetThreads get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  SetThreads set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  bool present() const { return get && set; }
};

// Sets or removes an environment variable for one test, restoring it afterwards.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }

private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(HostBlas, ThreadsFollowTheRequestUnlessTheUserChose) {
  const OpenBlas blas;
  if (!blas.present()) GTEST_SKIP() << "the host BLAS is not OpenBLAS";
  const int before = blas.get();
  {
    ScopedEnv unset("OPENBLAS_NUM_THREADS", nullptr);
    blas.set(2);  // OpenBLAS's own default on a 2-core machine
    EXPECT_TRUE(hybrid3d::Impl::matchHostBlasThreads(1));
    EXPECT_EQ(blas.get(), 1);
  }
  {
    ScopedEnv chosen("OPENBLAS_NUM_THREADS", "2");
    blas.set(2);
    EXPECT_FALSE(hybrid3d::Impl::matchHostBlasThreads(1));
    EXPECT_EQ(blas.get(), 2) << "an explicit OPENBLAS_NUM_THREADS must win";
  }
  blas.set(before);
}

TEST(HostBlas, DescriptionNamesLibraryKernelsAndThreads) {
  const OpenBlas blas;
  if (!blas.present()) GTEST_SKIP() << "the host BLAS is not OpenBLAS";
  const std::string d = hybrid3d::hostBlasDescription();
  EXPECT_EQ(d.rfind("OpenBLAS ", 0), 0u) << d;
  EXPECT_NE(d.find(" kernels, "), std::string::npos) << d;
  const int n = blas.get();
  EXPECT_NE(d.find(std::to_string(n) + (n == 1 ? " thread)" : " threads)")), std::string::npos)
      << d;
  EXPECT_NE(d.find(".so"), std::string::npos) << "names the library file: " << d;
}

}  // namespace
