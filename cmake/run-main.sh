#!/usr/bin/env bash
# The main job from a fresh Debian 12 machine: install, configure, build, run.
# Until the trainer lands this is the halo-exchange benchmark on 2 ranks.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup-debian.sh"
mpirun -n 2 --oversubscribe "$BUILD_DIR/bin/bench_halo_exchange" "$@"
