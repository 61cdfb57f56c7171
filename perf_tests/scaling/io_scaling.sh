#!/usr/bin/env bash
# io_scaling.sh: the I/O study. Runs bench_io (perf_tests/io/read_throughput.cpp: CosmoFlow-like
# 4-channel int16 samples of 128^3 and 256^3, each rank reading its subvolume of a spatial grid
# over all ranks) at each rank count and turns its report into one CSV row per (ranks, size):
#   ranks,size,grid,bytes_per_rank,        mean bytes a rank reads per sample (box + ghosts)
#   collective_cold_s,independent_cold_s,  seconds per sample, slowest rank, page cache dropped
#   collective_warm_s,independent_warm_s,  ... pages cached
#   compute_s,preprocess_s,                the simulated step (a sleep) and the log1p preprocess
#   exposed_off_s,exposed_on_s,            I/O wait per step left exposed, prefetch off / on
#   exposed_first_on_s                     (medians of steps 2..n); the first step with prefetch
# With --machine FILE, the performance model's read time per sample beside them (model_read_s:
# bytes per rank / the lesser of the file's per-rank read bandwidth and its aggregate share, as
# plan/StepCost.cpp predicts the I/O of a step). Then plots it (plot_io.py) when matplotlib is
# there.
#
#   bash perf_tests/scaling/io_scaling.sh --ranks "1 2"
#   LAUNCH='srun -n {ranks}' bash perf_tests/scaling/io_scaling.sh --ranks "1 8 64" \
#       --dir /lustre/$USER/tmp --samples 8
# --dir is where the sample files are written (default /tmp): on a cluster, the parallel file
# system the training data live on. Environment: BIN, LAUNCH, RANKS_PER_NODE (common.sh), PYTHON.
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SAMPLES=4 COMPUTE_MS="40 300" DIR=/tmp MACHINE=
usage="usage: io_scaling.sh [--ranks \"1 2\"] [--samples N] [--compute-ms \"MS128 MS256\"] [--dir DIR] [--out DIR] [--csv FILE] [--machine FILE]"
while (($#)); do
  case "$1" in
    --ranks) RANKS=$2 ;; --samples) SAMPLES=$2 ;; --compute-ms) COMPUTE_MS=$2 ;; --dir) DIR=$2 ;;
    --out) OUT=$2 ;; --csv) CSV=$2 ;; --machine) MACHINE=$2 ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "io_scaling.sh: unknown option $1"; echo "$usage"; exit 2 ;;
  esac
  shift 2
done
CSV=${CSV:-$OUT/io.csv}
[ -x "$BIN/bench_io" ] || { echo "error: no $BIN/bench_io (set BIN)"; exit 1; }
mkdir -p "$OUT"

header=ranks,size,grid,bytes_per_rank,collective_cold_s,independent_cold_s,collective_warm_s,independent_warm_s,compute_s,preprocess_s,exposed_off_s,exposed_on_s,exposed_first_on_s,model_read_s
# The machine file's read bandwidths (GB/s): per rank and aggregate; none without --machine.
read_rates=
if [ -n "$MACHINE" ]; then
  read_rates=$(python3 -c 'import sys, xml.etree.ElementTree as E
v = {p.get("name"): p.get("value") for p in E.parse(sys.argv[1]).iter("Parameter")}
print(v["read GB/s per rank"], v["aggregate read GB/s"])' "$MACHINE") || exit 1
fi
[ -s "$CSV" ] || echo "$header" >"$CSV"
failed=0
for N in $RANKS; do
  log=$OUT/bench_io-n$N.txt
  echo "== bench_io on $N rank(s): $log"
  # shellcheck disable=SC2086  # the launcher and the compute times split into words
  if ! $(launcher "$N") "$BIN/bench_io" "$SAMPLES" $COMPUTE_MS "$DIR" >"$log" 2>&1; then
    echo "   failed; the end of $log:"; tail -n 5 "$log" | sed 's/^/   /'; failed=1; continue
  fi
  # The report's tables (read_throughput.cpp's printf formats) to one row per size.
  awk -v N="$N" -v rates="$read_rates" '
    /^[0-9]+\^3 x 4 int16/ { size = $1; sub(/\^3/, "", size); grid = $0
                              sub(/.*grid /, "", grid); sub(/,.*/, "", grid) }
    $1 == "collective" || $1 == "independent" { t[$1 "_" $2] = $3 / 1e3 }
    /steps \(cold files, compute/ { c = $0; sub(/.*compute /, "", c); sub(/ ms.*/, "", c)
                              p = $0; sub(/.*preprocess /, "", p); sub(/ ms.*/, "", p) }
    /exposed I\/O per step/ { off = $0; sub(/.*prefetch off: /, "", off); sub(/ ms.*/, "", off)
                              on = $0; sub(/.* on: /, "", on); sub(/ ms.*/, "", on)
                              f = $0; sub(/.*first step with prefetch: /, "", f); sub(/ ms.*/, "", f)
                              # 4 int16 channels; an axis cut in d holds S + 2(d - 1) voxels
                              # with the ghost layers (width 1) the ranks read beside their box.
                              split(grid, d, "x"); bytes = 8
                              for (i = 1; i <= 3; ++i) bytes *= (size + 2 * (d[i] - 1)) / d[i]
                              model = ""
                              if (rates != "") { split(rates, r, " "); bw = r[1] + 0
                                if (r[2] / N < bw) bw = r[2] / N
                                model = sprintf("%g", bytes / (bw * 1e9)) }
                              printf "%d,%d,%s,%.0f,%g,%g,%g,%g,%g,%g,%g,%g,%g,%s\n", N, size, grid,
                                bytes, t["collective_cold"], t["independent_cold"],
                                t["collective_warm"], t["independent_warm"], c / 1e3, p / 1e3,
                                off / 1e3, on / 1e3, f / 1e3, model }' "$log" | tee -a "$CSV" | sed 's/^/   /'
done
echo "CSV: $CSV"
if ${PYTHON:-python3} -c 'import matplotlib' 2>/dev/null; then
  ${PYTHON:-python3} "$HERE/plot_io.py" "$CSV" --out "$OUT"
else
  echo "note: no matplotlib for ${PYTHON:-python3}: no plot (set PYTHON, e.g. PYTHON=/usr/bin/python3)"
fi
exit $failed
