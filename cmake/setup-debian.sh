#!/usr/bin/env bash
# Installs what hybrid3d needs from Debian 12 packages (only what is missing), then configures
# and builds it. Sourced by run-main.sh and run-tests.sh; run it alone to just build.
#   BUILD_DIR (default: build) and CMAKE_ARGS (extra configure arguments) may be set.
set -euo pipefail
HYBRID3D_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$HYBRID3D_ROOT/build}"

packages=(
  cmake make g++ pkg-config
  libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev libtrilinos-teuchos-dev
  libopenmpi-dev openmpi-bin libhdf5-openmpi-dev
  libopenblas-dev            # so KokkosBlas::gemm's libblas.so.3 is OpenBLAS, not the reference BLAS
  libfftw3-dev libfftw3-mpi-dev
  libnifti2-dev              # NIfTI-1/2 volumes for `hybrid3d import nifti`
  libdnnl-dev                # the onednn convolution engine
  libgtest-dev libbenchmark-dev
  clang-format               # the test `format` checks the tree against .clang-format
  clang                      # the tests clang_syntax.* parse every source with clang++ too
  python3-numpy python3-h5py python3-matplotlib  # tooling and plots (the resolution study's smoke test)
  python3-torch              # the PyTorch references of `hybrid3d predict` (unit_tests/reference/predict)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "hybrid3d: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

jobs="$(nproc 2>/dev/null || echo 2)"
# shellcheck disable=SC2086
cmake -S "$HYBRID3D_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j "$jobs"

# OpenMPI refuses to run as root unless told; tests and the main job run as root in CI.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
