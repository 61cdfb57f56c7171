#!/usr/bin/env bash
# The main job from a fresh Debian 12 machine: install, configure, build, then train CosmoFlow
# on 2 ranks from inputs/cosmoflow_demo.xml, which generates its own synthetic dataset first.
# Runs in ./hybrid3d_demo (data, checkpoint.h5 and metrics.csv land there).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup-debian.sh"
mkdir -p hybrid3d_demo
cd hybrid3d_demo
mpirun -n 2 --oversubscribe "$BUILD_DIR/bin/hybrid3d" train "$HYBRID3D_ROOT/inputs/cosmoflow_demo.xml" "$@"
