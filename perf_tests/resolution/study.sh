#!/usr/bin/env bash
# study.sh: does full resolution beat downsampled input for CosmoFlow? (docs/resolution.md)
# One synthetic cosmology dataset at S^3; the same samples downsampled by each factor (mean over
# f^3 blocks, `hybrid3d downsample`); CosmoFlow trained on every resolution with every
# seed -- same samples, epochs and optimiser settings, each input standardised per channel (after
# log1p) on its own training set -- and the validation MSE per parameter on held-out samples.
#
#   bash perf_tests/resolution/study.sh [options]
#     --size S          full resolution (default 128)
#     --factors "F .."  downsampling factors, 1 = full resolution (default "1 2 4")
#     --seeds "K .."    model seeds (initial weights and sample order; default "1 2")
#     --train N         training samples (default 512); --validation N (default 128)
#     --epochs E        (default 4); --batch B mini-batch (default 4); --lr X Adam rate (1e-4)
#     --ranks R         ranks per run (default 2: the full resolution splits each sample in two)
#     --precision P     Model/precision of every run: float (default), bfloat16, half, double
#     --out DIR         datasets, decks, runs, table and plots (default resolution_runs)
#     --smoke           CI check: S = 32, factors "1 2", one seed, 16 samples, 3 epochs; fails
#                       unless every run's training loss falls
# A run whose metrics are complete is not run again, so an interrupted study resumes.
# Environment: BIN (directory of hybrid3d, default build/bin), PYTHON (with h5py, numpy; plots
# need matplotlib), LAUNCH (default 'mpirun --oversubscribe -n {ranks}' under Open MPI).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=${BIN:-$ROOT/build/bin}
PYTHON=${PYTHON:-python3}
SIZE=128 FACTORS="1 2 4" SEEDS="1 2" TRAIN=512 VALIDATION=128 EPOCHS=4 BATCH=4 LR=0.0001
RANKS=2 OUT=resolution_runs SMOKE=0 DATA_SEED=2020 MEAN_COUNT=64 PRECISION=float
while [ $# -gt 0 ]; do
  case "$1" in
    --size) SIZE=$2 ;; --factors) FACTORS=$2 ;; --seeds) SEEDS=$2 ;; --train) TRAIN=$2 ;;
    --validation) VALIDATION=$2 ;; --epochs) EPOCHS=$2 ;; --batch) BATCH=$2 ;; --lr) LR=$2 ;;
    --ranks) RANKS=$2 ;; --out) OUT=$2 ;; --precision) PRECISION=$2 ;;
    --smoke) SMOKE=1 SIZE=32 FACTORS="1 2" SEEDS=1 TRAIN=16 VALIDATION=8 EPOCHS=3; shift; continue ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "study.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift 2
done
if [ -z "${LAUNCH:-}" ]; then
  LAUNCH='mpirun -n {ranks}'
  mpirun --version 2>&1 | grep -q 'Open MPI' && LAUNCH='mpirun --oversubscribe -n {ranks}'
fi
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run() { ${LAUNCH//\{ranks\}/$RANKS} "$BIN/hybrid3d" "$@"; }
mkdir -p "$OUT/decks" "$OUT/runs"

# The dataset at full resolution, then the same samples at each coarser one.
full="$OUT/data/s$SIZE"
[ -f "$full/manifest.txt" ] || run generate cosmology --out "$full" --size "$SIZE" \
  --train "$TRAIN" --validation "$VALIDATION" --seed "$DATA_SEED" --mean-count "$MEAN_COUNT" \
  | tail -n 1
for f in $FACTORS; do
  [ "$f" = 1 ] || [ -f "$OUT/data/s$((SIZE / f))/manifest.txt" ] ||
    run downsample --in "$full" --out "$OUT/data/s$((SIZE / f))" --factor "$f"
done

runs="$OUT/runs.csv"
[ -f "$runs" ] || echo "factor,width,seed,ranks,wall_s,run" > "$runs"
for seed in $SEEDS; do
  for f in $FACTORS; do
    width=$((SIZE / f)) name="f${f}_seed${seed}"
    data="$OUT/data/s$width" dir="$OUT/runs/$name" deck="$OUT/decks/$name.xml"
    if grep -q "^$f,$width,$seed," "$runs"; then echo "$name: done before"; continue; fi
    read -r offsets scales < <("$PYTHON" "$HERE/channel_stats.py" "$data")
    cat > "$deck" <<XML
<!-- Resolution study (perf_tests/resolution/study.sh): factor $f, width $width, seed $seed. -->
<ParameterList name="hybrid3d">
  <ParameterList name="Parallel">
    <Parameter name="spatial grid" type="string" value="auto"/>
  </ParameterList>
  <ParameterList name="Model">
    <Parameter name="architecture" type="string" value="cosmoflow"/>
    <Parameter name="input width" type="int" value="$width"/>
    <Parameter name="seed" type="int" value="$seed"/>
    <Parameter name="precision" type="string" value="$PRECISION"/>
  </ParameterList>
  <ParameterList name="Data">
    <Parameter name="train" type="string" value="$data/train"/>
    <Parameter name="validation" type="string" value="$data/validation"/>
    <Parameter name="log1p" type="bool" value="true"/>
    <Parameter name="channel offset" type="Array(double)" value="{$offsets}"/>
    <Parameter name="channel scale" type="Array(double)" value="{$scales}"/>
  </ParameterList>
  <ParameterList name="Training">
    <Parameter name="mini-batch" type="int" value="$BATCH"/>
    <Parameter name="epochs" type="int" value="$EPOCHS"/>
    <Parameter name="optimizer" type="string" value="adam"/>
    <Parameter name="learning rate" type="double" value="$LR"/>
    <Parameter name="warm-up epochs" type="double" value="1"/>
    <Parameter name="schedule" type="string" value="cosine"/>
    <Parameter name="minimum learning rate" type="double" value="$(awk "BEGIN{print $LR / 10}")"/>
    <Parameter name="print every" type="int" value="16"/>
    <Parameter name="checkpoint minutes" type="double" value="30"/>
    <Parameter name="output directory" type="string" value="$dir"/>
  </ParameterList>
</ParameterList>
XML
    rm -rf "$dir"
    start=$(date +%s.%N)
    run train "$deck" > "$OUT/runs/$name.log" 2>&1 ||
      { tail -n 5 "$OUT/runs/$name.log" >&2; echo "study.sh: $name failed" >&2; exit 1; }
    wall=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $start}")
    grep "done:" "$OUT/runs/$name.log" | tail -n 1
    echo "$f,$width,$seed,$RANKS,$wall,$dir" >> "$runs"
  done
done

check=()
[ "$SMOKE" = 1 ] && check=(--check-loss-falls)
"$PYTHON" "$HERE/summarize.py" --runs "$runs" --manifest "$full/manifest.txt" --out "$OUT" "${check[@]}"
if "$PYTHON" -c 'import matplotlib' 2>/dev/null; then
  "$PYTHON" "$HERE/plot_resolution.py" "$OUT/resolution.csv" --manifest "$full/manifest.txt" \
    --out "$OUT/resolution.png"
  for m in "$OUT"/runs/*/metrics.csv; do
    "$PYTHON" "$ROOT/perf_tests/plot_metrics.py" "$m" --out "${m%.csv}.png" \
      --targets amplitude,slope,cutoff,growth
  done
else
  echo "note: no matplotlib for $PYTHON: no plots (set PYTHON, e.g. PYTHON=/usr/bin/python3)"
fi
