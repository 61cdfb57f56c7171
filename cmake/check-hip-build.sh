#!/usr/bin/env bash
# Checks that hybrid3d compiles and links for HIP (no GPU needed): cmake/check-gpu-build.sh hip.
#   cmake/check-hip-build.sh [KOKKOS_PREFIX [BUILD_DIR]]   (see check-gpu-build.sh)
exec "$(dirname "${BASH_SOURCE[0]}")/check-gpu-build.sh" hip "$@"
