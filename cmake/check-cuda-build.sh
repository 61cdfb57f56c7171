#!/usr/bin/env bash
# Checks that hybrid3d compiles and links for CUDA (no GPU needed): cmake/check-gpu-build.sh cuda.
#   cmake/check-cuda-build.sh [KOKKOS_PREFIX [BUILD_DIR]]   (see check-gpu-build.sh)
exec "$(dirname "${BASH_SOURCE[0]}")/check-gpu-build.sh" cuda "$@"
