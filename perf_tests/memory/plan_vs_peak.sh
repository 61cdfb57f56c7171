#!/usr/bin/env bash
# The memory plan against what the ranks of a real run hold (issue 39, point 5): for each rank
# count, `hybrid3d calibrate` measures the fixed cost of a process on that many ranks (CosmoFlow
# at 16^3) into a machine file, `hybrid3d check --machine` prints the plan of CosmoFlow at S^3
# (mini-batch B, Adam; up to 8 ranks one group on the grid auto, beyond groups of 8), and `hybrid3d train` runs it two steps and prints
# every rank's peak resident memory (getrusage). One row per rank count: planned total per
# rank, the largest rank's peak, the error. More ranks than cores are oversubscribed (the memory
# does not care; the time does). CTest runs the same comparison at 1, 2, 4 and 8 ranks
# (cli.PlanMatchesPeakMemory.np*); this is the larger form, 32 ranks by default.
#
#   bash perf_tests/memory/plan_vs_peak.sh [--ranks 1,8,32] [--size 64] [--batch 4] [WORKDIR]
#
# HYBRID3D: the command (default build/bin/hybrid3d); MPIEXEC: the launcher (default mpirun).
set -euo pipefail
ranks=32 size=64 batch=4 work=perf_memory_work
while [[ $# -gt 0 ]]; do
  case $1 in
    --ranks) ranks=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    -*) echo "plan_vs_peak.sh: unknown option $1" >&2; exit 2 ;;
    *) work=$1; shift ;;
  esac
done
h3d=$(realpath "${HYBRID3D:-build/bin/hybrid3d}")
mpiexec=${MPIEXEC:-mpirun}
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"
work=$(realpath "$work")

# deck PATH DATA SIZE BATCH [GROUPS]: CosmoFlow on DATA/train, Adam, two steps; GROUPS
# data-parallel groups (default 1) and the spatial grid auto over the rest.
deck() {
  cat > "$1" <<XML
<ParameterList name="hybrid3d">
  <ParameterList name="Parallel">
    <Parameter name="data-parallel groups" type="int" value="${5:-1}"/>
    <Parameter name="spatial grid" type="string" value="auto"/>
  </ParameterList>
  <ParameterList name="Model">
    <Parameter name="architecture" type="string" value="cosmoflow"/>
    <Parameter name="input width" type="int" value="$3"/>
  </ParameterList>
  <ParameterList name="Data">
    <Parameter name="train" type="string" value="$2/train"/>
    <Parameter name="log1p" type="bool" value="true"/>
  </ParameterList>
  <ParameterList name="Training">
    <Parameter name="mini-batch" type="int" value="$4"/>
    <Parameter name="optimizer" type="string" value="adam"/>
    <Parameter name="max steps" type="int" value="2"/>
    <Parameter name="output directory" type="string" value="$work/run"/>
  </ParameterList>
</ParameterList>
XML
}

for s in 16 "$size"; do
  [[ -f $work/data$s/manifest.txt ]] ||
    "$mpiexec" -n 1 "$h3d" generate cosmology --out "$work/data$s" --size "$s" \
      --train "$((batch > 2 ? batch * 2 : 4))" --validation 0 --test 0 --seed 3 > /dev/null
done
deck "$work/calibrate.xml" "$work/data16" 16 2

rows=""
for n in ${ranks//,/ }; do
  launch=("$mpiexec" -n "$n" --oversubscribe)
  # Up to 8 ranks one group; beyond, groups of 8 (2x2x2: CosmoFlow's 4^3 pools split no finer).
  deck "$work/deck.xml" "$work/data$size" "$size" "$batch" "$((n > 8 ? n / 8 : 1))"
  base=()
  [[ $n -eq 1 ]] && base=(--base "$source_dir/inputs/machines/lassen-v100.xml")
  "${launch[@]}" "$h3d" calibrate --steps 1 --file-mib 8 "${base[@]}" \
    --out "$work/machine$n.xml" "$work/calibrate.xml" > "$work/calibrate$n.log"
  "${launch[@]}" "$h3d" check --machine "$work/machine$n.xml" "$work/deck.xml" > "$work/check$n.log"
  rm -rf "$work/run"
  "${launch[@]}" "$h3d" train "$work/deck.xml" > "$work/train$n.log"
  layout=$(sed -n 's/^  layout *\([0-9]* rank(s) = .*\), [a-z0-9]*$/\1/p' "$work/check$n.log")
  fixed=$(sed -n 's/.*fixed memory per process \([0-9.]*\) MiB.*/\1/p' "$work/calibrate$n.log")
  planned=$(sed -n 's/^  total per rank *\([0-9.]*\) .*/\1/p' "$work/check$n.log")
  peak=$(sed -n 's/.*peak resident memory per rank: largest \([0-9.]*\) MiB.*/\1/p' "$work/train$n.log")
  rows+=$(printf '%6d  %-48s %8s %10s %10s %+7.1f%%' "$n" "$layout" "$fixed" "$planned" "$peak" \
    "$(echo "100 * ($planned - $peak) / $peak" | bc -l)")$'\n'
done
echo "CosmoFlow ${size}^3, float, mini-batch $batch, Adam, 2 steps; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs"
printf '%6s  %-48s %8s %10s %10s %8s\n' ranks layout "fixed" "planned" "peak" "error"
printf '%6s  %-48s %8s %10s %10s %8s\n' "" "" "MiB" "MiB/rank" "MiB/rank" ""
printf '%s' "$rows"
