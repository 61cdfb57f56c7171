#!/usr/bin/env bash
# strong.sh: strong scaling of hybrid3d training. The sample size S and the global mini-batch B
# stay fixed while the ranks grow: spatial parallelism first (grids 1x1x1, 2x1x1, 2x2x1,
# 2x2x2, ... up to --max-spatial ranks per sample), then data-parallel groups (N = G x P, G
# dividing B). Each run appends one row to OUT/scaling.csv (study "strong"; median per-step
# times over the steps after the first print interval, peak RSS, samples/s) and, when
# `hybrid3d plan` exists, the planner's prediction for the same layout to OUT/prediction.csv.
#
#   bash perf_tests/scaling/strong.sh --model cosmoflow --size 64 --batch 2 --ranks "1 2"
#   LAUNCH='srun -n {ranks}' BIN=build-cuda/bin bash perf_tests/scaling/strong.sh \
#       --size 128 --batch 64 --ranks "1 2 4 8 16 32 64" --steps 30 --print-every 10
#   ... --layouts "1:1x1x1 1:2x1x1 2:2x1x1"    (explicit G:DxHxW layouts instead of --ranks)
#   ... --layouts "1:2x1x1/32"   (G:DxHxW/K: the layers on layer grids, minimum box width K)
# Environment: BIN, LAUNCH, RANKS_PER_NODE, TIME_BIN, PLAN_LAUNCH (common.sh).
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

BATCH=2 MAX_SPATIAL=8 LAYOUTS=
usage="usage: strong.sh [options]
  --batch B          global mini-batch (default 2)
  --max-spatial P    most ranks per sample (default 8)
  --layouts \"G:DxHxW[/K] ...\"  run exactly these layouts (ranks = G x D x H x W; /K: layer
                     grids, each layer's input boxes at least K wide)
$common_usage"
while (($#)); do
  parse_common "$@"; n=$?
  if ((n)); then shift "$n"; continue; fi
  case "$1" in
    --batch) BATCH=$2; shift 2 ;;
    --max-spatial) MAX_SPATIAL=$2; shift 2 ;;
    --layouts) LAYOUTS=$2; shift 2 ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "strong.sh: unknown option $1"; echo "$usage"; exit 2 ;;
  esac
done
finish_common

# The layout of N ranks: the most ranks per sample (<= MAX_SPATIAL) whose groups divide B.
if [ -z "$LAYOUTS" ]; then
  for N in $RANKS; do
    layout=
    for ((P = (N < MAX_SPATIAL ? N : MAX_SPATIAL); P >= 1; P--)); do
      if ((N % P == 0 && BATCH % (N / P) == 0)); then layout=$((N / P)):$(grid_of "$P"); break; fi
    done
    [ -n "$layout" ] && LAYOUTS+=" $layout" || echo "note: no layout of $N ranks fits mini-batch $BATCH"
  done
fi

failed=0
for L in $LAYOUTS; do
  G=${L%%:*} grid=${L#*:} k=0
  [[ $grid == */* ]] && { k=${grid#*/}; grid=${grid%/*}; }
  run_layout strong $((G * $(tr x '*' <<<"$grid"))) "$grid" "$SIZE" "$BATCH" $((BATCH * STEPS)) "$k" ||
    failed=1
done
echo "measurements: $CSV$( ((HAVE_PLAN)) && echo ", predictions: $PRED")"
exit $failed
