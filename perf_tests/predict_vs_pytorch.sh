#!/usr/bin/env bash
# U-Net inference of one S^3 volume: `hybrid3d predict` beside PyTorch on the same cores, then
# memory per rank against ranks (issue 37).
#
#   perf_tests/predict_vs_pytorch.sh [BUILD_DIR=build] [--size 128] [--ranks "1 2 4 8"] [--bf16]
#                                    [--coretypes "unset Haswell SkylakeX Zen"] [--repeats 1]
#
# Makes its own inputs in a scratch folder (removed at the end): a checkpoint from a 1-step
# `hybrid3d train` of a unet3d deck at 16^3 (the U-Net takes any multiple of 8, so its weights
# serve every size), and one S^3 and one (S/4)^3 segmentation sample (`hybrid3d generate`).
#
# 1. Times: `mpirun -n 2 hybrid3d predict` of the S^3 sample (2 ranks, one per core; T / N of its
#    last line) against perf_tests/predict/pytorch_predict.py (the same model, eval mode,
#    torch.inference_mode(), 2 threads) with PyTorch set up as perf_tests/step_vs_pytorch.sh
#    does: tcmalloc preloaded, OMP_WAIT_POLICY=PASSIVE, OPENBLAS_NUM_THREADS=2, once per OpenBLAS
#    core type of the list, the fastest kept. --bf16 adds hybrid3d --precision bfloat16 against
#    PyTorch's bfloat16 autocast (with float's fastest core type only). --repeats N: N volumes
#    per hybrid3d run and N timed forwards per PyTorch run (default 1: one cold volume each).
#    Ratio PyTorch / hybrid3d above 1: hybrid3d is faster.
# 2. Memory: hybrid3d's peak memory per rank for the S^3 volume on each count of --ranks
#    (oversubscribed where ranks exceed cores), the ratio to 1 rank, and PyTorch's peak RSS for
#    the same forward; then the largest cubic U-Net volume MemTotal (/proc/meminfo) holds, for
#    hybrid3d on 8 ranks and for PyTorch, from a straight line through each one's memory at S and
#    S/4 (fixed part + bytes per voxel), rounded down to a multiple of 8.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build=build
size=128
ranks_list="1 2 4 8"
coretypes="unset Haswell SkylakeX Zen"
precisions="float"
repeats=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --size) size="$2"; shift 2 ;;
    --ranks) ranks_list="$2"; shift 2 ;;
    --coretypes) coretypes="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --bf16) precisions="float bfloat16"; shift ;;
    -h|--help) sed -n '2,24p' "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) echo "predict_vs_pytorch.sh: unknown option $1" >&2; exit 2 ;;
    *) build="$1"; shift ;;
  esac
done
if ! [[ "$size" =~ ^[0-9]+$ ]] || (( size < 32 || size % 32 != 0 )); then
  echo "predict_vs_pytorch.sh: --size $size: a multiple of 32 (the U-Net needs multiples of 8, at S/4 too)" >&2
  exit 2
fi
h3d="$build/bin/hybrid3d"
[[ -x "$h3d" ]] || { echo "predict_vs_pytorch.sh: $h3d not found (build first)" >&2; exit 2; }
timing_ranks=2
small=$((size / 4))

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi() { local n="$1"; shift; mpirun --oversubscribe -n "$n" "$@"; }

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "== load average at start: $(load) on $(nproc) cores (a shared machine makes every number slower)"

# The inputs: samples at S and S/4 (each --repeats times under its own name), a checkpoint.
echo "== inputs in $work"
for s in 16 "$small" "$size"; do
  mpi 2 "$h3d" generate segmentation --out "$work/data$s" --size "$s" --train 1 --validation 0 >/dev/null
done
sample() { find "$work/data$1/train" -name '*.h5' | sort | head -1; }
for s in "$small" "$size"; do
  mkdir -p "$work/in$s"
  for ((i = 0; i < repeats; ++i)); do cp "$(sample "$s")" "$work/in$s/volume_$i.h5"; done
done
cat >"$work/unet.xml" <<EOF
<ParameterList name="hybrid3d">
  <ParameterList name="Model">
    <Parameter name="architecture" type="string" value="unet3d"/>
    <Parameter name="input width" type="int" value="16"/>
  </ParameterList>
  <ParameterList name="Data">
    <Parameter name="train" type="string" value="$work/data16/train"/>
  </ParameterList>
  <ParameterList name="Training">
    <Parameter name="max steps" type="int" value="1"/>
    <Parameter name="optimizer" type="string" value="sgd"/>
    <Parameter name="output directory" type="string" value="$work/run"/>
  </ParameterList>
</ParameterList>
EOF
mpi 2 "$h3d" train "$work/unet.xml" >"$work/train.log" ||
  { cat "$work/train.log"; echo "predict_vs_pytorch.sh: the 1-step training run failed" >&2; exit 1; }

# "T M" (seconds per volume, peak MiB per rank) from predict's last line:
# predict: N volume(s), V voxels in T s (X voxels/s), peak memory per rank M MiB
parse_predict() {
  local line fields
  line="$(tail -n 1 "$1")"
  fields="$(sed -nE 's/^predict: ([0-9]+) volume\(s\), [0-9]+ voxels in ([0-9.eE+-]+) s \([0-9.eE+-]+ voxels\/s\), peak memory per rank ([0-9.eE+-]+) MiB$/\1 \2 \3/p' <<<"$line")"
  [[ -n "$fields" ]] || { echo "predict_vs_pytorch.sh: $1: the last line is not predict's summary: $line" >&2; return 1; }
  awk '{printf "%.6g %s\n", $2 / $1, $3}' <<<"$fields"
}
# predict RANKS PRECISION S -> "T M", its output in $work/log_RANKS_PRECISION_S.
predict() {
  local log="$work/log_$1_$2_$3"
  echo "== hybrid3d: mpirun -n $1 hybrid3d predict ($3^3, $2, $repeats volume(s))" >&2
  mpi "$1" "$h3d" predict --checkpoint "$work/run/checkpoint.h5" --in "$work/in$3"/*.h5 \
    --out "$work/out_$1_$2_$3" --precision "$2" --overwrite >"$log" ||
    { cat "$log" >&2; echo "predict_vs_pytorch.sh: predict on $1 ranks failed" >&2; return 1; }
  tail -n 1 "$log" >&2
  parse_predict "$log"
}

declare -A h3d_time h3d_mem
for p in $precisions; do
  r="$(predict "$timing_ranks" "$p" "$size")"
  h3d_time[$p]="${r% *}"; h3d_mem[$p]="${r#* }"
done

# PyTorch: one run per core type and precision (and one at S/4 for the memory line).
have_torch=0
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then have_torch=1; fi
declare -A torch_ms torch_ct torch_peak
torch_results() { awk '/^RESULT /{for(i=2;i<=NF;i++){split($i,kv,"="); v[kv[1]]=kv[2]}
  print v["mean_ms"], v["peak_rss_mib"]}' "$1"; }
if [[ $have_torch == 1 ]]; then
  tcmalloc="$(ls /usr/lib/x86_64-linux-gnu/libtcmalloc.so.4 /usr/lib/*/libtcmalloc.so.4 2>/dev/null | head -1 || true)"
  [[ -n "$tcmalloc" ]] || echo "note: libtcmalloc.so.4 not found (apt-get install libgoogle-perftools4): PyTorch runs with glibc malloc"
  envs=(LD_PRELOAD="$tcmalloc" OMP_WAIT_POLICY=PASSIVE OPENBLAS_NUM_THREADS="$timing_ranks")
  torch_run() {  # CORETYPE PRECISION SIZE REPEATS -> the output file
    local out="$work/torch_$1_$2_$3" coretype flag=()
    if [[ "$1" == unset ]]; then coretype=(-u OPENBLAS_CORETYPE); else coretype=(OPENBLAS_CORETYPE="$1"); fi
    [[ "$2" == bfloat16 ]] && flag=(--bf16)
    echo "== PyTorch, OPENBLAS_CORETYPE=$1, $2, $3^3" >&2
    # A core type whose kernels this CPU lacks dies (SIGILL): say so and go on.
    env "${coretype[@]}" "${envs[@]}" /usr/bin/python3 "$here/predict/pytorch_predict.py" --size "$3" \
      --threads "$timing_ranks" --repeats "$4" --warmup 0 "${flag[@]}" | tee "$out" >&2 ||
      { echo "note: PyTorch ($2) with OPENBLAS_CORETYPE=$1 stopped with an error; left out" >&2; rm -f "$out"; }
    echo "$out"
  }
  for p in $precisions; do
    # bfloat16 autocast runs once, with float's fastest core type: on a CPU without bfloat16
    # instructions one forward takes about 15 times float's, and the core type moves only
    # OpenBLAS, not the oneDNN convolutions that take the time.
    cts="$coretypes"
    [[ "$p" == bfloat16 ]] && cts="${torch_ct[float]:-unset}"
    for ct in $cts; do
      f="$(torch_run "$ct" "$p" "$size" "$repeats")"
      [[ -f "$f" ]] || continue
      read -r ms peak < <(torch_results "$f")
      if [[ -z "${torch_ms[$p]:-}" ]] || awk -v a="$ms" -v b="${torch_ms[$p]}" 'BEGIN{exit !(a<b)}'; then
        torch_ms[$p]="$ms"; torch_ct[$p]="$ct"
      fi
      [[ -n "${torch_peak[$p]:-}" ]] || torch_peak[$p]="$peak"
    done
  done
  f="$(torch_run "${torch_ct[float]:-unset}" float "$small" 1)"
  [[ -f "$f" ]] && read -r _ torch_peak_small < <(torch_results "$f")
else
  echo "== PyTorch skipped: /usr/bin/python3 cannot import torch (apt-get install -y python3-torch google-perftools libgoogle-perftools4)"
fi

# Memory on every rank count of the list (the timing run's figure where it is the same run).
declare -A mem
for n in $ranks_list; do
  if [[ $n == "$timing_ranks" && $repeats == 1 ]]; then mem[$n]="${h3d_mem[float]}"; continue; fi
  r="$(predict "$n" float "$size")"; mem[$n]="${r#* }"
done
mem_small_8=""
if [[ " $ranks_list " == *" 8 "* ]]; then r="$(predict 8 float "$small")"; mem_small_8="${r#* }"; fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{if (a=="" || a=="-" || b=="" || b=="-" || b==0) print "-"; else printf "%.2f", a/b}'; }
echo
echo "== load average at end: $(load)"
echo "== U-Net inference of one ${size}^3 volume, batch 1: hybrid3d on $timing_ranks ranks x 1 core vs PyTorch on $timing_ranks threads"
echo "   (hybrid3d: T / N of predict's last line, reading and writing included; PyTorch: the mean forward,"
echo "    torch.inference_mode(); OPENBLAS_CORETYPE for hybrid3d: ${OPENBLAS_CORETYPE:-(unset)})"
printf "%-10s %14s %14s %-10s %12s\n" precision hybrid3d_s pytorch_s "(coretype)" torch/h3d
for p in $precisions; do
  ts="$(awk -v m="${torch_ms[$p]:-}" 'BEGIN{if (m=="") print "-"; else printf "%.2f", m/1000}')"
  printf "%-10s %14.2f %14s %-10s %12s\n" "$p" "${h3d_time[$p]}" "$ts" "(${torch_ct[$p]:--})" \
    "$(ratio "$ts" "${h3d_time[$p]}")"
done

echo
echo "== Peak memory for the ${size}^3 volume, float (hybrid3d: per rank, from predict's last line;"
echo "   PyTorch: the process's peak RSS, one process)"
printf "%-8s %18s %16s %12s\n" ranks h3d_MiB_per_rank h3d_MiB_total "vs 1 rank"
for n in $ranks_list; do
  printf "%-8s %18.1f %16.1f %12s\n" "$n" "${mem[$n]}" "$(awk -v m="${mem[$n]}" -v n="$n" 'BEGIN{print m*n}')" \
    "$(ratio "${mem[$n]}" "${mem[1]:-}")"
done
echo "PyTorch peak RSS: ${torch_peak[float]:--} MiB"
[[ -n "${mem[4]:-}" && -n "${mem[1]:-}" ]] && echo "hybrid3d memory per rank, 4 ranks / 1 rank: $(ratio "${mem[4]}" "${mem[1]}")"

# The largest S (multiple of 8) whose straight-line memory fits in MemTotal: fixed + b * S^3.
largest() {  # MEM_AT_SIZE MEM_AT_SMALL (MiB, all ranks together)
  awk -v m1="$1" -v m0="$2" -v s1="$size" -v s0="$small" -v total="$3" 'BEGIN{
    b = (m1 - m0) / (s1^3 - s0^3); a = m1 - b * s1^3;
    if (b <= 0) { print "- (memory did not grow with the volume)"; exit }
    s = int(exp(log((total - a) / b) / 3) / 8) * 8;
    printf "%d^3 (%.0f bytes per voxel, fixed %.0f MiB)", s, b * 1048576, a }'
}
memtotal="$(awk '/^MemTotal:/{printf "%.0f", $2 / 1024}' /proc/meminfo)"
echo
echo "== Largest U-Net volume in this machine's MemTotal ($memtotal MiB), from the memory at ${size}^3 and ${small}^3:"
if [[ -n "$mem_small_8" ]]; then
  echo "hybrid3d on 8 ranks: $(largest "$(awk -v m="${mem[8]}" 'BEGIN{print 8*m}')" \
    "$(awk -v m="$mem_small_8" 'BEGIN{print 8*m}')" "$memtotal")"
else
  echo "hybrid3d on 8 ranks: - (--ranks has no 8)"
fi
if [[ -n "${torch_peak[float]:-}" && -n "${torch_peak_small:-}" ]]; then
  echo "PyTorch:             $(largest "${torch_peak[float]}" "$torch_peak_small" "$memtotal")"
else
  echo "PyTorch:             -"
fi
