#!/usr/bin/env bash
# project.sh: the performance model on the paper's two strong-scaling experiments (Oyama et al.,
# TPDS 2021): CosmoFlow 512^3 at mini-batch 64 on 128 to 2048 GPUs and the 3D U-Net 256^3 on 64
# to 512 GPUs (decks in perf_tests/scaling/paper/), planned with `hybrid3d plan` on each
# machine file given: per rank count the deck's layout (one grid for every layer) and the
# planner's best layout (groups, spatial grid and layer grids searched), and the paper's own
# 2048-GPU layout (inputs/cosmoflow_512_2048.xml: the deep layers on coarser grids); one CSV
# row per layout planned, a table (projection_table.py: the speedups over 512 GPUs beside the
# paper's 1.77x, term by term) and a plot of the speedup and the phase split
# (plot_projection.py, when matplotlib is there). The machines in BF16_MACHINES (default: the
# H100 file, whose bfloat16 tensor-core rate is published) are planned in bfloat16 too
# (`hybrid3d plan --precision bfloat16`): rows NAME-MACHINE-bfloat16 beside the float ones.
# The machines in RECOMPUTE_MACHINES (default: the V100 file) are planned with activation
# recomputation too, at fewer GPUs per sample than fit without it (below).
#
#   [BF16_MACHINES="h100-cluster ..."] [RECOMPUTE_MACHINES="lassen-v100 ..."]
#   [RECOMPUTE_LIMIT_GIB=G] [SKIP_SCALING=1] bash perf_tests/scaling/project.sh [OUT] [MACHINE.xml ...]
# Default machines: inputs/machines/lassen-v100.xml and h100-cluster.xml; OUT: scaling_projection
# (perf_tests/scaling/results holds the committed one). Paths are given relative to the
# repository, so the CSVs hold no path of this machine.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=${BIN:-$ROOT/build/bin}
OUT=${1:-scaling_projection}
shift $(($# > 0 ? 1 : 0))
MACHINES=("$@")
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
for i in "${!MACHINES[@]}"; do MACHINES[i]=$(realpath --relative-to="$ROOT" "${MACHINES[i]}"); done
cd "$ROOT" || exit 1
((${#MACHINES[@]})) || MACHINES=(inputs/machines/lassen-v100.xml inputs/machines/h100-cluster.xml)
BF16_MACHINES=${BF16_MACHINES-h100-cluster}
# Each entry "MACHINE.xml PRECISION": every machine in float, those named in BF16_MACHINES in
# bfloat16 as well.
RUNS=()
for machine in "${MACHINES[@]}"; do
  RUNS+=("$machine float")
  for b in $BF16_MACHINES; do
    [ "$(basename "$machine" .xml)" = "$b" ] && RUNS+=("$machine bfloat16")
  done
done
status=0
# SKIP_SCALING=1: the recomputation rows alone (below), not the strong-scaling ones.
((${SKIP_SCALING:-0})) && RUNS=()
# plan NAME DECK ARGS...: `hybrid3d plan` into OUT/NAME.txt and OUT/projection-NAME.csv.
plan() {
  local name=$1 deck=$2
  shift 2
  "$BIN/hybrid3d" plan "$deck" "$@" --csv "$OUT/projection-$name.csv" >"$OUT/$name.txt" 2>&1 ||
    { status=1; echo "   failed:"; tail -n 3 "$OUT/$name.txt"; return 1; }
}
for run in "${RUNS[@]}"; do
  machine=${run% *} precision=${run#* }
  m=$(basename "$machine" .xml)
  # The name's machine part: MACHINE, or MACHINE-bfloat16 (projection_table.py reads it so).
  [ "$precision" = float ] || m=$m-$precision
  for problem in "cosmoflow_512_mb64 128,256,512,1024,2048" "unet3d_256 64,128,256,512"; do
    deck=perf_tests/scaling/paper/${problem% *}.xml name=${problem% *}-$m ranks=${problem#* }
    echo "== ${problem% *} on $m, ranks $ranks: $OUT/$name.txt"
    plan "$name" "$deck" --ranks "$ranks" --machine "$machine" --precision "$precision" || continue
    sed -n '/strong scaling predicted/,$p' "$OUT/$name.txt"
    # The planner's best layout of each rank count, planned on its own: its CSV row.
    rm -f "$OUT/projection-$name-best.csv"
    while read -r n layout; do
      plan "$name-best-$n" "$deck" --layout "$layout" --machine "$machine" --top 0 \
        --precision "$precision" || continue
      if [ -s "$OUT/projection-$name-best.csv" ]; then
        tail -n +2 "$OUT/projection-$name-best-$n.csv" >>"$OUT/projection-$name-best.csv"
      else
        cat "$OUT/projection-$name-best-$n.csv" >"$OUT/projection-$name-best.csv"
      fi
      rm -f "$OUT/projection-$name-best-$n.csv" "$OUT/$name-best-$n.txt"
    done < <(sed -n 's/^ *\([0-9]*\) ranks: best \([^ ]*\) .*/\1 \2/p' "$OUT/$name.txt")
  done
  echo "== the paper's 2048-GPU layout (inputs/cosmoflow_512_2048.xml) on $m"
  plan "cosmoflow_512_2048-$m" inputs/cosmoflow_512_2048.xml --ranks 2048 --machine "$machine" \
    --top 0 --precision "$precision" &&
    sed -n 's/^  predicted step/  the paper'"'"'s layout: predicted step/p' "$OUT/cosmoflow_512_2048-$m.txt"
done
# Recomputation (Model/recompute, issue 39): on the machines in RECOMPUTE_MACHINES (default: the
# V100 file), the deck's layouts with fewer GPUs per sample than fit without it -- CosmoFlow
# 512^3 on 128 and 256 GPUs (2 and 4 per sample), the U-Net 256^3 on 64 and 128 (4 and 8 per
# sample; the deck needs 16) -- planned with none, all and auto against RECOMPUTE_LIMIT_GIB per
# rank (default 14500 MiB: a V100's 16158 MiB less room for the CUDA context): rows
# NAME-MACHINE-recompute-MODE, each with its recomputation and predicted time.
RECOMPUTE_MACHINES=${RECOMPUTE_MACHINES-lassen-v100}
RECOMPUTE_LIMIT_GIB=${RECOMPUTE_LIMIT_GIB:-14.16015625}
for machine in "${MACHINES[@]}"; do
  m=$(basename "$machine" .xml)
  case " $RECOMPUTE_MACHINES " in *" $m "*) ;; *) continue ;; esac
  for problem in "cosmoflow_512_mb64 128,256" "unet3d_256 64,128"; do
    deck=perf_tests/scaling/paper/${problem% *}.xml ranks=${problem#* }
    for mode in none all auto; do
      name=${problem% *}-$m-recompute-$mode
      echo "== ${problem% *} on $m, ranks $ranks, Model/recompute $mode: $OUT/$name.txt"
      plan "$name" "$deck" --ranks "$ranks" --machine "$machine" --top 0 --recompute "$mode" \
        --memory-limit "$RECOMPUTE_LIMIT_GIB" || continue
      sed -n '/^  predicted step/p;/^  recomputation (/p' "$OUT/$name.txt"
    done
  done
done
${PYTHON:-python3} "$HERE/projection_table.py" "$OUT" | tee "$OUT/projection.md"
if ${PYTHON:-python3} -c 'import matplotlib' 2>/dev/null; then
  ${PYTHON:-python3} "$HERE/plot_projection.py" "$OUT"/projection-*-best.csv --out "$OUT" \
    --label "planner's best layouts"
else
  echo "note: no matplotlib for ${PYTHON:-python3}: no plot (set PYTHON, e.g. PYTHON=/usr/bin/python3)"
fi
exit $status
