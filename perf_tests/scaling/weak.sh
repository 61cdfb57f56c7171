#!/usr/bin/env bash
# weak.sh: weak scaling of hybrid3d training: the work per rank stays fixed while the ranks grow.
#   data (default): a fixed spatial grid per sample (--grid, default 1x1x1) and a fixed local
#     batch b per data-parallel group; N ranks hold G = N/P groups and the mini-batch is b x G
#     (study "weak").
#   --spatial: one group, the grid of N ranks (2x1x1, 2x2x1, 2x2x2, ...) and a sample of about
#     S^3 x N voxels: width S x N^(1/3) rounded to a multiple of --size-multiple (study
#     "weak-spatial"; plot_scaling.py compares voxels per second per rank, so the rounding
#     does not bias the efficiency).
# Each run appends one row to OUT/scaling.csv and, when `hybrid3d plan` exists, the prediction
# to OUT/prediction.csv, as strong.sh does.
#
#   bash perf_tests/scaling/weak.sh --model cosmoflow --size 64 --local-batch 1 --ranks "1 2"
#   bash perf_tests/scaling/weak.sh --size 32 --spatial --ranks "1 2 4 8"
#   LAUNCH='srun -n {ranks}' bash perf_tests/scaling/weak.sh --size 128 --grid 2x2x2 \
#       --local-batch 4 --ranks "8 16 32 64 128"
# Environment: BIN, LAUNCH, RANKS_PER_NODE, TIME_BIN, PLAN_LAUNCH (common.sh).
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

LOCAL_BATCH=1 GRID=1x1x1 SPATIAL=0
usage="usage: weak.sh [options]
  --local-batch b    samples per data-parallel group per step (default 1)
  --grid DxHxW       ranks per sample in the data study (default 1x1x1)
  --spatial          spatial weak scaling instead (one group, S^3/N fixed)
$common_usage"
while (($#)); do
  parse_common "$@"; n=$?
  if ((n)); then shift "$n"; continue; fi
  case "$1" in
    --local-batch) LOCAL_BATCH=$2; shift 2 ;;
    --grid) GRID=$2; shift 2 ;;
    --spatial) SPATIAL=1; shift ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "weak.sh: unknown option $1"; echo "$usage"; exit 2 ;;
  esac
done
finish_common

failed=0
if ((SPATIAL)); then
  for N in $RANKS; do
    S=$(python3 -c "import math; w = $SIZE * $N ** (1 / 3)
print(2 ** round(math.log2(w)) if '$MODEL'.startswith('cosmoflow') else max(8, round(w / 8) * 8))")
    run_layout weak-spatial "$N" "$(grid_of "$N")" "$S" "$LOCAL_BATCH" $((LOCAL_BATCH * STEPS)) || failed=1
  done
else
  P=$(($(tr x '*' <<<"$GRID")))
  max=0; for N in $RANKS; do ((N > max)) && max=$N; done
  samples=$((LOCAL_BATCH * (max / P) * STEPS))  # one dataset for every run: the largest batch's
  for N in $RANKS; do
    if ((N % P)); then echo "note: $N ranks do not hold whole $GRID grids: skipped"; continue; fi
    run_layout weak "$N" "$GRID" "$SIZE" $((LOCAL_BATCH * N / P)) "$samples" || failed=1
  done
fi
echo "measurements: $CSV$( ((HAVE_PLAN)) && echo ", predictions: $PRED")"
exit $failed
