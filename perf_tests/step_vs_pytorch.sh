#!/usr/bin/env bash
# The training step of hybrid3d beside PyTorch's on the same cores (issue 8, target 1).
#
#   perf_tests/step_vs_pytorch.sh [BUILD_DIR=build] [--steps N] [--warmup W] [--with-unet64]
#                                 [--model cosmoflow|unet3d] [--size S] [--ranks 2]
#                                 [--coretypes "unset Haswell SkylakeX Zen"]
#
# Builds nothing. hybrid3d: BUILD_DIR/bin/bench_train_step on RANKS MPI ranks (one per core),
# with the environment as it is (OPENBLAS_CORETYPE and OPENBLAS_NUM_THREADS untouched: the
# layers make the host BLAS use Kokkos's thread count, layers/HostBlas.hpp). PyTorch (Debian's python3-torch, optional: skipped
# with a note when /usr/bin/python3 cannot import torch): perf_tests/step/pytorch_step.py with
# RANKS threads, tcmalloc preloaded, OMP_WAIT_POLICY=PASSIVE, OPENBLAS_NUM_THREADS=RANKS, once
# per OpenBLAS core type of the list ("unset" = the variable removed), keeping the fastest per
# configuration. Prints one table: configuration, hybrid3d ms, best PyTorch ms (core type),
# PyTorch / hybrid3d (above 1: hybrid3d is faster), and for each the share of the cores' FP32
# FMA peak that the convolutions' FLOPs per step imply: a step near 100 % cannot get faster
# without fewer FLOPs. Medians of the timed steps.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build=build
ranks=2
coretypes="unset Haswell SkylakeX Zen"
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps|--warmup|--model|--size) args+=("$1" "$2"); shift 2 ;;
    --with-unet64) args+=("$1"); shift ;;
    --ranks) ranks="$2"; shift 2 ;;
    --coretypes) coretypes="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) echo "step_vs_pytorch.sh: unknown option $1" >&2; exit 2 ;;
    *) build="$1"; shift ;;
  esac
done
bench="$build/bin/bench_train_step"
[[ -x "$bench" ]] || { echo "step_vs_pytorch.sh: $bench not found (build first)" >&2; exit 2; }

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "== load average at start: $(load) on $(nproc) cores (a shared machine makes every number slower)"
echo "== hybrid3d: mpirun -n $ranks $bench ${args[*]:-}"
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  mpirun -n "$ranks" "$bench" "${args[@]}" | tee "$out/hybrid3d.txt"

# model size median_ms [step_gflop core_peak_gflops] of every RESULT line of a file.
results() { awk '/^RESULT /{m="";s="";t="";g="";p=""; for(i=2;i<=NF;i++){split($i,kv,"=");
  if(kv[1]=="model")m=kv[2]; if(kv[1]=="size")s=kv[2]; if(kv[1]=="median_ms")t=kv[2];
  if(kv[1]=="step_gflop")g=kv[2]; if(kv[1]=="core_peak_gflops")p=kv[2]}
  print m, s, t, g, p}' "$1"; }

have_torch=0
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then have_torch=1; fi
if [[ $have_torch == 1 ]]; then
  tcmalloc="$(ls /usr/lib/x86_64-linux-gnu/libtcmalloc.so.4 /usr/lib/*/libtcmalloc.so.4 2>/dev/null | head -1 || true)"
  [[ -n "$tcmalloc" ]] || echo "note: libtcmalloc.so.4 not found (apt-get install libgoogle-perftools4): PyTorch runs with glibc malloc"
  for ct in $coretypes; do
    echo "== PyTorch, OPENBLAS_CORETYPE=$ct"
    envs=(LD_PRELOAD="$tcmalloc" OMP_WAIT_POLICY=PASSIVE OPENBLAS_NUM_THREADS="$ranks")
    if [[ "$ct" == unset ]]; then coretype=(-u OPENBLAS_CORETYPE); else coretype=(OPENBLAS_CORETYPE="$ct"); fi
    # A core type whose kernels use instructions this CPU lacks dies (SIGILL): say so and go
    # on; the configurations it finished before that still count.
    env "${coretype[@]}" "${envs[@]}" /usr/bin/python3 "$here/step/pytorch_step.py" \
      --threads "$ranks" "${args[@]}" | tee "$out/torch_$ct.txt" ||
      echo "note: PyTorch with OPENBLAS_CORETYPE=$ct stopped with an error; its unfinished configurations are left out"
  done
else
  echo "== PyTorch skipped: /usr/bin/python3 cannot import torch (apt-get install -y python3-torch google-perftools libgoogle-perftools4)"
fi

echo
echo "== load average at end: $(load)"
echo "== Training step, batch 1, $ranks ranks x 1 core (hybrid3d) vs $ranks threads (PyTorch); OPENBLAS_CORETYPE for hybrid3d: ${OPENBLAS_CORETYPE:-(unset)}"
echo "   (peak%: the convolutions' FLOPs per step over the step time, as a share of the FP32 FMA"
echo "    peak of $ranks cores measured by bench_train_step in this run; the same FLOPs for both)"
printf "%-18s %12s %7s %14s %7s %-10s %10s\n" configuration hybrid3d_ms peak% pytorch_ms peak% \
  "(coretype)" torch/h3d
# Share of the peak of $ranks cores that GFLOP in MS milliseconds is.
peakshare() { awk -v g="$1" -v ms="$2" -v p="$3" -v r="$ranks" 'BEGIN{if(p>0) printf "%.1f", 100*g/(ms*1e-3)/(p*r); else print "-"}'; }
results "$out/hybrid3d.txt" | while read -r model size ms gflop peak; do
  best=""; bestct="-"
  if [[ $have_torch == 1 ]]; then
    for ct in $coretypes; do
      t="$(results "$out/torch_$ct.txt" | awk -v m="$model" -v s="$size" '$1==m && $2==s {print $3}')"
      [[ -n "$t" ]] || continue
      if [[ -z "$best" ]] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a<b)}'; then best="$t"; bestct="$ct"; fi
    done
  fi
  if [[ -n "$best" ]]; then
    printf "%-18s %12.1f %7s %14.1f %7s %-10s %10.2f\n" "$model S=$size" "$ms" \
      "$(peakshare "$gflop" "$ms" "$peak")" "$best" "$(peakshare "$gflop" "$best" "$peak")" "($bestct)" \
      "$(awk -v a="$best" -v b="$ms" 'BEGIN{print a/b}')"
  else
    printf "%-18s %12.1f %7s %14s %7s %-10s %10s\n" "$model S=$size" "$ms" \
      "$(peakshare "$gflop" "$ms" "$peak")" - - "" -
  fi
done
