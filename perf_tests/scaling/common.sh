# shellcheck shell=bash
# common.sh: what strong.sh and weak.sh share (sourced, not run). run_layout makes the deck of
# one layout, launches `hybrid3d train` on it with every rank's peak RSS recorded, appends the
# run's row to the scaling CSV and, when the binary has a `plan` command, the planner's
# prediction for the same layout to the prediction CSV.
#
# Environment (all optional):
#   BIN         directory of hybrid3d and bench_io (default build/bin of this checkout)
#   LAUNCH      launcher; {ranks} is replaced by the rank count and {nodes} by the nodes they
#               fill at RANKS_PER_NODE (default 1) ranks per node. Default 'mpirun -n {ranks}'
#               (with --oversubscribe under Open MPI); e.g. 'srun -N {nodes} -n {ranks}' or
#               'jsrun -n {ranks} -a 1 -g 1' (slurm.sbatch, lsf.bsub)
#   TIME_BIN    GNU time for the peak RSS (default /usr/bin/time; empty: no memory column)
#   PLAN_LAUNCH prefix for `hybrid3d plan` (default none: one process, no launcher)
#   KEEP_CHECKPOINTS=1 keeps each run's final checkpoint.h5 (deleted by default)

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=${BIN:-$ROOT/build/bin}
RANKS_PER_NODE=${RANKS_PER_NODE:-1}
TIME_BIN=${TIME_BIN-/usr/bin/time}
[ -n "$TIME_BIN" ] && [ ! -x "$TIME_BIN" ] && { echo "note: $TIME_BIN missing, no memory column"; TIME_BIN=; }
if [ -z "${LAUNCH:-}" ]; then
  LAUNCH='mpirun -n {ranks}'
  mpirun --version 2>&1 | grep -q 'Open MPI' && LAUNCH='mpirun --oversubscribe -n {ranks}'
fi
# Open MPI refuses root without these (containers, this project's test machines).
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# launcher N: the LAUNCH words for N ranks.
launcher() {
  local l=${LAUNCH//\{ranks\}/$1}
  echo "${l//\{nodes\}/$(( ($1 + RANKS_PER_NODE - 1) / RANKS_PER_NODE ))}"
}

# Options both studies take; each script adds its own before calling parse_common.
# shellcheck disable=SC2034  # used by the scripts that source this file
MODEL=cosmoflow SIZE=64 STEPS=10 PRINT_EVERY=2 OUT=scaling_runs BASE='' MACHINE='' CSV='' PRED='' DATA=''
# shellcheck disable=SC2016,SC2034  # backquotes shown, not run; used by the sourcing scripts
common_usage='  --model M          cosmoflow | cosmoflow_mlperf | unet3d (default cosmoflow)
  --size S           input width (default 64)
  --ranks "N ..."    rank counts (default "1 2")
  --steps N          steps per run (default 10); the first --print-every are warm-up
  --print-every K    default 2
  --out DIR          runs, decks and CSVs (default scaling_runs)
  --csv FILE         measurements (default OUT/scaling.csv, appended to)
  --prediction FILE  `hybrid3d plan` rows (default OUT/prediction.csv)
  --machine FILE     machine file for `hybrid3d plan` (default: none given)
  --base DECK        base deck (default inputs/cosmoflow_demo.xml, or unet3d_demo.xml)
  --data DIR         where generated datasets go (default OUT/data)'
# shellcheck disable=SC2034
RANKS="1 2"

# parse_common "$@": handles one shared option; returns the number of words it took (0: none).
parse_common() {
  # shellcheck disable=SC2034
  case "$1" in
    --model) MODEL=$2 ;; --size) SIZE=$2 ;; --ranks) RANKS=$2 ;; --steps) STEPS=$2 ;;
    --print-every) PRINT_EVERY=$2 ;; --out) OUT=$2 ;; --csv) CSV=$2 ;; --prediction) PRED=$2 ;;
    --machine) MACHINE=$2 ;; --base) BASE=$2 ;; --data) DATA=$2 ;;
    *) return 0 ;;
  esac
  return 2
}

finish_common() {
  CSV=${CSV:-$OUT/scaling.csv} PRED=${PRED:-$OUT/prediction.csv} DATA=${DATA:-$OUT/data}
  if [ -z "$BASE" ]; then
    case "$MODEL" in unet3d) BASE=$ROOT/inputs/unet3d_demo.xml ;; *) BASE=$ROOT/inputs/cosmoflow_demo.xml ;; esac
  fi
  [ -x "$BIN/hybrid3d" ] || { echo "error: no $BIN/hybrid3d (set BIN)"; exit 1; }
  mkdir -p "$OUT"
  HAVE_PLAN=0
  if "$BIN/hybrid3d" --help 2>&1 | grep -q '^  plan '; then HAVE_PLAN=1
  else echo "note: $BIN/hybrid3d has no 'plan' command: no predictions written"; fi
  ((HAVE_PLAN)) && [ -z "$MACHINE" ] &&
    echo "note: no --machine: the plan predicts memory and bytes, no times"
}

# grid_of P: P ranks as DxHxW, each prime factor (largest first) on the smallest axis, D >= H >= W.
grid_of() {
  local p=$1 f d=(1 1 1) primes=() i
  for ((f = 2; p > 1; )); do
    if ((p % f == 0)); then primes=("$f" "${primes[@]}"); ((p /= f)); else ((f++)); fi
  done
  for f in "${primes[@]}"; do
    i=0; ((d[1] < d[i])) && i=1; ((d[2] < d[i])) && i=2
    ((d[i] *= f))
  done
  printf '%s\n' "${d[@]}" | sort -rn | paste -sd x
}

# run_layout STUDY RANKS GRID SIZE BATCH SAMPLES [K]: one training run, one CSV row (and
# prediction). K > 0: the layers on layer grids, minimum box width K (layout G:DxHxW/K; the run's
# directory ends in -kK).
run_layout() {
  local study=$1 ranks=$2 grid=$3 size=$4 batch=$5 samples=$6 k=${7:-0}
  local P=$(( $(tr x '*' <<<"$grid") )) groups dir deck launch layout
  groups=$((ranks / P))
  layout=$groups:$grid
  dir=$OUT/$study-$MODEL-s$size-b$batch-n$ranks-$groups-$grid
  ((k > 0)) && { layout+=/$k; dir+=-k$k; }
  deck=$dir/deck.xml
  mkdir -p "$dir" && rm -f "$dir"/rss.*
  local data=$DATA/$MODEL-s$size-n$samples gen
  gen=$(python3 "$HERE/make_deck.py" --base "$BASE" --model "$MODEL" --out "$deck" --grid "$grid" \
    --size "$size" --batch "$batch" --steps "$STEPS" --print-every "$PRINT_EVERY" \
    --outdir "$dir/out" --data "$data" --train-samples "$samples" --min-box-width "$k" \
    --print-generate) || return 1
  launch=$(launcher "$ranks")
  # The dataset in a launch of its own: the generator's memory stays out of the run's peak RSS.
  if [ ! -f "$data/manifest.txt" ]; then
    mapfile -t gen <<<"$gen"
    echo "== generating $data"
    $launch "$BIN/hybrid3d" "${gen[@]}" >"$dir/generate.txt" 2>&1 ||
      { echo "   failed; see $dir/generate.txt"; return 1; }
  fi
  echo "== $study: $ranks rank(s) = $layout, S=$size, mini-batch $batch: $dir"
  # --overwrite: a study run again replaces its own earlier run of this layout.
  local cmd=("$BIN/hybrid3d" train "$deck" --overwrite)
  # Each rank under GNU time: its peak RSS (KiB) in dir/rss.HOST.PID ($0 = time, $1 = dir).
  # shellcheck disable=SC2016  # expanded by that sh, per rank
  [ -n "$TIME_BIN" ] &&
    cmd=(sh -c 'd=$1; shift; exec "$0" -f %M -o "$d/rss.$(uname -n).$$" "$@"' "$TIME_BIN" "$dir" "${cmd[@]}")
  if ! $launch "${cmd[@]}" >"$dir/log.txt" 2>&1; then
    echo "   failed (skipped); the end of $dir/log.txt:"; tail -n 5 "$dir/log.txt" | sed 's/^/   /'
    return 1
  fi
  # The final checkpoint (parameters and optimizer state: about 110 MB for CosmoFlow) is of no use
  # to a timing run; KEEP_CHECKPOINTS=1 keeps it.
  [ "${KEEP_CHECKPOINTS:-0}" = 1 ] || rm -f "$dir/out/checkpoint.h5"
  python3 "$HERE/summarize.py" --metrics "$dir/out/metrics.csv" --rss "$dir/rss.*" \
    --print-every "$PRINT_EVERY" --csv "$CSV" --study "$study" --model "$MODEL" --size "$size" \
    --batch "$batch" --ranks "$ranks" --groups "$groups" --grid "$grid" --layout "$layout" |
    sed 's/^/   measured: /'
  if ((HAVE_PLAN)); then
    local m=(); [ -n "$MACHINE" ] && m=(--machine "$MACHINE")
    rm -f "$dir/plan.csv"
    if ${PLAN_LAUNCH:-} "$BIN/hybrid3d" plan "$deck" --ranks "$ranks" --layout "$layout" \
         "${m[@]}" --csv "$dir/plan.csv" >"$dir/plan.txt" 2>&1 && [ -s "$dir/plan.csv" ]; then
      # The header once, then this layout's rows.
      if [ -s "$PRED" ]; then tail -n +2 "$dir/plan.csv" >>"$PRED"; else cat "$dir/plan.csv" >"$PRED"; fi
      awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next }
        { print "   predicted: step_s " $c["step_s"] ", memory_mib " $c["memory_mib"] }' "$dir/plan.csv"
    else
      echo "   plan failed (no prediction); see $dir/plan.txt"
    fi
  fi
}
