#!/usr/bin/env bash
# The training step of hybrid3d beside PyTorch's on the same cores (issue 8, target 1).
#
#   perf_tests/step_vs_pytorch.sh [BUILD_DIR=build] [--steps N] [--warmup W] [--with-unet64]
#                                 [--model cosmoflow|unet3d] [--size S] [--ranks 2]
#                                 [--coretypes "unset Haswell SkylakeX Zen"] [--bf16]
#
# --bf16: both programs also in mixed precision (hybrid3d Model/precision bfloat16, PyTorch's
# bfloat16 autocast), and the table gains their columns and the ratios the issue asks for.
#
# Builds nothing. hybrid3d: BUILD_DIR/bin/bench_train_step on RANKS MPI ranks (one per core),
# with the environment as it is (OPENBLAS_CORETYPE and OPENBLAS_NUM_THREADS untouched: the
# layers make the host BLAS use Kokkos's thread count, engines/HostBlas.hpp). PyTorch (Debian's python3-torch, optional: skipped
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
precisions="float"
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps|--warmup|--model|--size) args+=("$1" "$2"); shift 2 ;;
    --with-unet64) args+=("$1"); shift ;;
    --ranks) ranks="$2"; shift 2 ;;
    --coretypes) coretypes="$2"; shift 2 ;;
    --bf16) precisions="float bfloat16"; shift ;;
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
for p in $precisions; do
  echo "== hybrid3d: mpirun -n $ranks $bench ${args[*]:-} --precision $p"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun -n "$ranks" "$bench" "${args[@]}" --precision "$p" | tee -a "$out/hybrid3d.txt"
done

# model size precision median_ms [step_gflop core_peak_gflops] of every RESULT line of a file.
results() { awk '/^RESULT /{m="";s="";t="";g="";p="";q="float"; for(i=2;i<=NF;i++){split($i,kv,"=");
  if(kv[1]=="model")m=kv[2]; if(kv[1]=="size")s=kv[2]; if(kv[1]=="median_ms")t=kv[2];
  if(kv[1]=="precision")q=kv[2];
  if(kv[1]=="step_gflop")g=kv[2]; if(kv[1]=="core_peak_gflops")p=kv[2]}
  print m, s, q, t, g, p}' "$1"; }

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
    for p in $precisions; do
      flag=(); [[ "$p" == bfloat16 ]] && flag=(--bf16)
      env "${coretype[@]}" "${envs[@]}" /usr/bin/python3 "$here/step/pytorch_step.py" \
        --threads "$ranks" "${args[@]}" "${flag[@]}" | tee -a "$out/torch_$ct.txt" ||
        echo "note: PyTorch ($p) with OPENBLAS_CORETYPE=$ct stopped with an error; its unfinished configurations are left out"
    done
  done
else
  echo "== PyTorch skipped: /usr/bin/python3 cannot import torch (apt-get install -y python3-torch google-perftools libgoogle-perftools4)"
fi

echo
echo "== load average at end: $(load)"
echo "== Training step, batch 1, $ranks ranks x 1 core (hybrid3d) vs $ranks threads (PyTorch); OPENBLAS_CORETYPE for hybrid3d: ${OPENBLAS_CORETYPE:-(unset)}"
echo "   (peak%: the convolutions' FLOPs per step over the step time, as a share of the FP32 FMA"
echo "    peak of $ranks cores measured by bench_train_step in this run; the same FLOPs for both)"
# Share of the peak of $ranks cores that GFLOP in MS milliseconds is.
peakshare() { awk -v g="$1" -v ms="$2" -v p="$3" -v r="$ranks" 'BEGIN{if(p>0) printf "%.1f", 100*g/(ms*1e-3)/(p*r); else print "-"}'; }
# The fastest PyTorch median of MODEL SIZE PRECISION over the core types, and that core type.
best_torch() {
  local best="" bestct="-" t
  if [[ $have_torch == 1 ]]; then
    for ct in $coretypes; do
      [[ -f "$out/torch_$ct.txt" ]] || continue
      t="$(results "$out/torch_$ct.txt" | awk -v m="$1" -v s="$2" -v q="$3" '$1==m && $2==s && $3==q {print $4}')"
      [[ -n "$t" ]] || continue
      if [[ -z "$best" ]] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a<b)}'; then best="$t"; bestct="$ct"; fi
    done
  fi
  echo "${best:--} $bestct"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{if (a=="-" || b=="-" || b==0) print "-"; else printf "%.2f", a/b}'; }
printf "%-18s %-9s %12s %7s %14s %7s %-10s %10s\n" configuration precision hybrid3d_ms peak% \
  pytorch_ms peak% "(coretype)" torch/h3d
results "$out/hybrid3d.txt" | while read -r model size prec ms gflop peak; do
  read -r best bestct < <(best_torch "$model" "$size" "$prec")
  printf "%-18s %-9s %12.1f %7s %14s %7s %-10s %10s\n" "$model S=$size" "$prec" "$ms" \
    "$(peakshare "$gflop" "$ms" "$peak")" "$best" \
    "$([[ $best == - ]] && echo - || peakshare "$gflop" "$best" "$peak")" "($bestct)" \
    "$(ratio "$best" "$ms")"
done
if [[ "$precisions" == *bfloat16* ]]; then
  echo
  echo "== Mixed precision: hybrid3d bfloat16 against PyTorch's bfloat16 autocast and against its own float"
  printf "%-18s %10s %10s %10s %10s %16s %16s %16s\n" configuration h3d_float h3d_bf16 torch_float \
    torch_bf16 torch_bf16/h3d_bf16 h3d_float/h3d_bf16 torch_float/h3d_float
  results "$out/hybrid3d.txt" | awk '$3=="float"{print $1, $2}' | while read -r model size; do
    hf="$(results "$out/hybrid3d.txt" | awk -v m="$model" -v s="$size" '$1==m && $2==s && $3=="float"{print $4}')"
    hb="$(results "$out/hybrid3d.txt" | awk -v m="$model" -v s="$size" '$1==m && $2==s && $3=="bfloat16"{print $4}')"
    read -r tf _ < <(best_torch "$model" "$size" float)
    read -r tb _ < <(best_torch "$model" "$size" bfloat16)
    printf "%-18s %10s %10s %10s %10s %16s %16s %16s\n" "$model S=$size" "${hf:--}" "${hb:--}" "$tf" "$tb" \
      "$(ratio "$tb" "${hb:--}")" "$(ratio "${hf:--}" "${hb:--}")" "$(ratio "$tf" "${hf:--}")"
  done
fi
