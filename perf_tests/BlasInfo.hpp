#pragma once
// Which BLAS a benchmark really ran with, and the OpenBLAS environment: numbers mean little
// without them (docs/design.md section 10: libblas.so.3 is a Debian alternative that may be the
// reference BLAS or OpenBLAS, and OPENBLAS_CORETYPE may be set by the machine).

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <hybrid3d/engines/HostBlas.hpp>

namespace hybrid3d::bench {

// The BLAS shared objects this process mapped, as real paths (symlinks and alternatives
// resolved by the loader), comma-separated.
inline std::string loadedBlas() {
  std::ifstream maps("/proc/self/maps");
  std::string line, found;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if ((path.find("blas") != std::string::npos || path.find("mkl") != std::string::npos) &&
        found.find(path) == std::string::npos)
      found += (found.empty() ? "" : ", ") + path;
  }
  return found.empty() ? "(no BLAS library mapped)" : found;
}

// Prints the BLAS (after making its threads follow Kokkos, as the layers do: a comparison
// GEMM must run on the cores the layers run on) and the OpenBLAS environment.
inline void printBlasInfo() {
  hostBlasThreadsFollowKokkos();
  const std::string lib = loadedBlas();
  std::printf("BLAS libraries mapped: %s%s\n", lib.c_str(),
              lib.find("openblas") != std::string::npos ? "" : " (NOT OpenBLAS: reference?)");
  std::printf("host GEMM: %s\n", hostBlasDescription().c_str());
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  const char* nthreads = std::getenv("OPENBLAS_NUM_THREADS");
  std::printf("OPENBLAS_CORETYPE=%s OPENBLAS_NUM_THREADS=%s\n", coretype ? coretype : "(unset)",
              nthreads ? nthreads : "(unset)");
}

}  // namespace hybrid3d::bench
