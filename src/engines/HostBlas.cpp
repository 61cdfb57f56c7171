// The host BLAS's threads and identity (include/hybrid3d/engines/HostBlas.hpp). The library is
// found at run time (dlsym on the process's symbols), so the build needs no BLAS headers of its
// own and a switched Debian alternative is reported as what it is.
#include <hybrid3d/engines/HostBlas.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Error.hpp>

namespace hybrid3d {
namespace {

template <class F>
F symbol(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

bool userChose(const char* variable) {
  const char* v = std::getenv(variable);
  return v && *v;
}

// The shared object that provides sgemm_, or "" when it is linked statically.
std::string sgemmLibrary() {
  Dl_info info{};
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  return sgemm && dladdr(sgemm, &info) && info.dli_fname ? info.dli_fname : "";
}

}  // namespace

bool Impl::matchHostBlasThreads(int threads) {
  bool set = false;
  if (auto openblas = symbol<void (*)(int)>("openblas_set_num_threads");
      openblas && !userChose("OPENBLAS_NUM_THREADS")) {
    openblas(threads);
    set = true;
  }
  if (auto blis = symbol<void (*)(long)>("bli_thread_set_num_threads");
      blis && !userChose("BLIS_NUM_THREADS")) {
    blis(threads);
    set = true;
  }
  return set;
}

void hostBlasThreadsFollowKokkos() {
  static std::once_flag once;
  std::call_once(
      once, [] { Impl::matchHostBlasThreads(Kokkos::DefaultHostExecutionSpace().concurrency()); });
}

std::string hostBlasDescription() {
  const std::string where = sgemmLibrary();
  const std::string in = where.empty() ? "" : " in " + where;
  if (auto config = symbol<char* (*)()>("openblas_get_config")) {
    auto core = symbol<char* (*)()>("openblas_get_corename");
    auto threads = symbol<int (*)()>("openblas_get_num_threads");
    std::string version = config();
    version = version.substr(0, version.find(' ', version.find(' ') + 1));  // "OpenBLAS 0.3.21"
    const int n = threads ? threads() : 0;
    return Impl::concat(version, " (", core ? core() : "?", " kernels, ", n,
                        n == 1 ? " thread)" : " threads)", in);
  }
  if (auto version = symbol<const char* (*)()>("bli_info_get_version_str")) {
    auto threads = symbol<long (*)()>("bli_thread_get_num_threads");
    return Impl::concat("BLIS ", version(), " (", threads ? threads() : 0L, " threads)", in);
  }
  return where.empty() ? std::string("unknown BLAS") : "BLAS" + in;
}

}  // namespace hybrid3d
