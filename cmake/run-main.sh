#!/usr/bin/env bash
# The main job from a fresh Debian 12 machine: install, configure, build, then train CosmoFlow
# on 2 ranks from inputs/cosmoflow_demo.xml, which generates its own synthetic dataset first.
# Runs in ./hybrid3d_demo (data, checkpoint.h5 and metrics.csv land there), then plots the run's
# metrics.csv (perf_tests/plot_metrics.py) where a python3 has matplotlib.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup-debian.sh"
mkdir -p hybrid3d_demo
cd hybrid3d_demo
# Run again, the main job starts over: --overwrite keeps the earlier run's files under a dated
# name (unless the arguments resume it with --restart).
fresh=(--overwrite)
for a in "$@"; do [ "$a" = --restart ] && fresh=(); done
mpirun -n 2 --oversubscribe "$BUILD_DIR/bin/hybrid3d" train "$HYBRID3D_ROOT/inputs/cosmoflow_demo.xml" "${fresh[@]}" "$@"
# Debian's python3 where the first one on the PATH (pyenv, conda) has no matplotlib.
for python in python3 /usr/bin/python3; do
  if "$python" -c 'import matplotlib' 2>/dev/null; then
    "$python" "$HYBRID3D_ROOT/perf_tests/plot_metrics.py" hybrid3d_demo_run/metrics.csv \
      --targets amplitude,slope,cutoff,growth --title "main job: inputs/cosmoflow_demo.xml"
    break
  fi
done
