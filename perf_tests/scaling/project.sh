#!/usr/bin/env bash
# project.sh: the performance model on the paper's two strong-scaling experiments (Oyama et al.,
# TPDS 2021): CosmoFlow 512^3 at mini-batch 64 on 128 to 2048 GPUs and the 3D U-Net 256^3 on 64
# to 512 GPUs (decks in perf_tests/scaling/paper/), planned with `hybrid3d plan` on each
# machine file given: the deck's layout and the best layouts of every rank count, the predicted
# strong scaling, one CSV row per rank count (the deck's layout), and a plot of the speedup
# and the phase split (plot_projection.py, when matplotlib is there).
#
#   bash perf_tests/scaling/project.sh [OUT] [MACHINE.xml ...]
# Default machines: inputs/machines/lassen-v100.xml and h100-cluster.xml; OUT: scaling_projection.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=${BIN:-$ROOT/build/bin}
OUT=${1:-scaling_projection}
shift $(($# > 0 ? 1 : 0))
MACHINES=("$@")
((${#MACHINES[@]})) || MACHINES=("$ROOT/inputs/machines/lassen-v100.xml" "$ROOT/inputs/machines/h100-cluster.xml")
mkdir -p "$OUT"
status=0
for machine in "${MACHINES[@]}"; do
  m=$(basename "$machine" .xml)
  for problem in "cosmoflow_512_mb64 128,256,512,2048" "unet3d_256 64,128,256,512"; do
    deck=${problem% *} ranks=${problem#* }
    echo "== $deck on $m, ranks $ranks: $OUT/$deck-$m.txt"
    "$BIN/hybrid3d" plan "$HERE/paper/$deck.xml" --ranks "$ranks" --machine "$machine" \
      --csv "$OUT/$deck-$m.csv" >"$OUT/$deck-$m.txt" 2>&1 || { status=1; tail -n 3 "$OUT/$deck-$m.txt"; continue; }
    sed -n '/strong scaling predicted/,$p' "$OUT/$deck-$m.txt"
  done
done
if ${PYTHON:-python3} -c 'import matplotlib' 2>/dev/null; then
  ${PYTHON:-python3} "$HERE/plot_projection.py" "$OUT"/*.csv --out "$OUT"
else
  echo "note: no matplotlib for ${PYTHON:-python3}: no plot (set PYTHON, e.g. PYTHON=/usr/bin/python3)"
fi
exit $status
