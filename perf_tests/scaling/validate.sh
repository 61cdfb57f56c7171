#!/usr/bin/env bash
# validate.sh: the performance model against measurements on this machine (issue 12). With a
# machine file calibrated here (`hybrid3d calibrate`), every layout below is trained for a few
# steps (strong.sh: median per-step time and phase split of world rank 0, the bytes it handed to
# halo exchanges and gradient reductions) and planned (`hybrid3d plan --layout`), and
# compare.py prints predicted, measured and the error side by side:
#   - time, where every rank has a core of its own (1 and 2 ranks on a 2-core machine):
#     CosmoFlow at S = 64 and 128 and the U-Net at S = 64, on 1 rank, 2 ranks split 2x1x1 and
#     1x1x2, and 2 data-parallel groups;
#   - bytes only, on 4 and 8 oversubscribed ranks (CosmoFlow 64, U-Net 32);
#   - layer grids (layouts G:DxHxW/K: each layer on the finest coarsening of the grid whose input
#     boxes are at least K wide, tensors redistributed between them): time at 2 ranks (the deep
#     layers on one rank per sample), bytes at 4 and 8 (redistributions' bytes too);
#   - the U-Net at S = 128: planned only, its memory per rank against this machine's.
#
#   bash perf_tests/scaling/validate.sh MACHINE.xml [OUT]     (about 20 minutes on 2 quiet cores)
#   bash perf_tests/scaling/validate.sh --replan MACHINE.xml [OUT]   (plans the runs of OUT again)
#   bash perf_tests/scaling/validate.sh --layer-grids MACHINE.xml [OUT]   (the layer-grid runs only)
# Environment: BIN, LAUNCH (common.sh). Output: OUT/validation.md (default scaling_validation).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
REPLAN=0 ONE_GRID=1
[ "${1:-}" = --replan ] && { REPLAN=1; shift; }
[ "${1:-}" = --layer-grids ] && { ONE_GRID=0; shift; }
MACHINE=${1:?usage: validate.sh [--replan | --layer-grids] MACHINE.xml [OUT]}
OUT=${2:-scaling_validation}
BIN=${BIN:-$ROOT/build/bin}
export BIN
mkdir -p "$OUT"
rm -f "$OUT/prediction.csv"
common=(--out "$OUT" --batch 2 --print-every 1 --prediction "$OUT/plan-without-machine.csv")
if ((!REPLAN)); then
rm -f "$OUT/scaling.csv"
if ((ONE_GRID)); then
timed="1:1x1x1 1:2x1x1 1:1x1x2 2:1x1x1"
bash "$HERE/strong.sh" "${common[@]}" --model cosmoflow --size 64 --steps 6 --layouts "$timed"
bash "$HERE/strong.sh" "${common[@]}" --model cosmoflow --size 128 --steps 5 --layouts "$timed"
bash "$HERE/strong.sh" "${common[@]}" --model unet3d --size 64 --steps 3 --layouts "$timed"
bash "$HERE/strong.sh" "${common[@]}" --model cosmoflow --size 64 --steps 2 \
  --layouts "1:2x2x1 2:2x1x1 1:2x2x2 2:2x2x1"
bash "$HERE/strong.sh" "${common[@]}" --model unet3d --size 32 --steps 2 \
  --layouts "1:2x2x1 2:2x1x1 1:2x2x2 2:2x2x1"
fi
# Layer grids: at S = 64 (128) boxes of at least 16 (32) put conv3 on 1x1x1, one sample per rank.
# Run alone, each beside its one-grid 2x1x1 in the same session (a control: how busy the
# machine was shows in that layout's error).
control=""
((ONE_GRID)) || control="1:2x1x1 "
bash "$HERE/strong.sh" "${common[@]}" --model cosmoflow --size 64 --steps 6 \
  --layouts "${control}1:2x1x1/16"
bash "$HERE/strong.sh" "${common[@]}" --model cosmoflow --size 128 --steps 5 \
  --layouts "${control}1:2x1x1/32"
bash "$HERE/strong.sh" "${common[@]}" --model unet3d --size 64 --steps 3 \
  --layouts "${control}1:2x1x1/32"
bash "$HERE/strong.sh" "${common[@]}" --model cosmoflow --size 64 --steps 2 \
  --layouts "1:2x2x1/16 1:2x2x2/16 2:2x2x1/16"
bash "$HERE/strong.sh" "${common[@]}" --model unet3d --size 32 --steps 2 --layouts "1:2x2x2/16"
fi
# Every run planned on MACHINE (its directory: STUDY-MODEL-sS-bB-nRANKS-GROUPS-GRID[-kK]).
for dir in "$OUT"/strong-*; do
  layout=${dir##*-n}; layout=${layout#*-}; layout=${layout/-/:}; layout=${layout/-k//}
  "$BIN/hybrid3d" plan "$dir/deck.xml" --layout "$layout" --machine "$MACHINE" \
    --csv "$dir/plan.csv" >"$dir/plan.txt" 2>&1 || { echo "plan failed: $dir/plan.txt"; continue; }
  if [ -s "$OUT/prediction.csv" ]; then tail -n +2 "$dir/plan.csv"; else cat "$dir/plan.csv"; fi \
    >>"$OUT/prediction.csv"
done
# The U-Net at 128 is only planned: its memory per rank against this machine's.
((ONE_GRID)) && python3 "$HERE/make_deck.py" --base "$ROOT/inputs/unet3d_demo.xml" --model unet3d \
  --out "$OUT/unet3d-128.xml" --grid 1x1x1 --size 128 --batch 2 --steps 2 --print-every 1 \
  --outdir "$OUT/unet3d-128" --data "$OUT/data/unet3d-128" --train-samples 4 >/dev/null
((ONE_GRID)) && for L in 1:1x1x1 1:2x1x1 2:1x1x1; do
  "$BIN/hybrid3d" plan "$OUT/unet3d-128.xml" --layout "$L" --machine "$MACHINE" \
    --csv "$OUT/unet3d-128-$L.csv" >"$OUT/unet3d-128-$L.txt" 2>&1 &&
    tail -n +2 "$OUT/unet3d-128-$L.csv" >>"$OUT/prediction.csv"
done
python3 "$HERE/compare.py" --measured "$OUT/scaling.csv" --predicted "$OUT/prediction.csv" \
  --machine "$MACHINE" --cores "$(nproc)" | tee "$OUT/validation.md"
