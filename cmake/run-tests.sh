#!/usr/bin/env bash
# The full test suite from a fresh Debian 12 machine: install, configure, build, ctest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup-debian.sh"
cd "$BUILD_DIR"
ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "$@"
