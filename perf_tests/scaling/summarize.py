#!/usr/bin/env python3
"""summarize.py: turns one training run's metrics.csv into one row of a scaling CSV.

metrics.csv (src/train/Metrics.cpp, Trainer.cpp) has one `train` row per step, written by world
rank 0: that step's wall time on rank 0 split into compute_s, halo_s, allreduce_s and io_wait_s
(compute = step - halo - allreduce - io, so the four add up to the step; waiting for a slower
rank shows up in halo or allreduce). The first print interval (steps 1..print_every) is
discarded as warm-up; each column of the row is the median over the remaining steps (so the
phase medians need not add up exactly to step_s). memory_mib is the largest peak RSS over the
ranks, from the files `/usr/bin/time -f %M -o FILE` left (KiB), empty when there are none.
halo_bytes and allreduce_bytes are what rank 0 handed to the halo exchanges and the gradient
reduction per step (the same every step; empty for a metrics.csv without those columns). On
layer grids the step has a fifth phase, redistribute_s (moving tensors between the grids; not
in compute_s), and redistribute_bytes what rank 0 sent to other ranks doing so. layout is the
run's G:DxHxW, with /K where its layers ran on the minimum box width K.

  python3 summarize.py --metrics run/out/metrics.csv --rss 'run/rss.*' --print-every 2 \
      --csv scaling.csv --study strong --model cosmoflow --size 64 --batch 2 --ranks 2 \
      --groups 1 --grid 2x1x1 [--layout 1:2x1x1/8]
"""
import argparse
import csv
import glob
import os
import statistics
import sys

COLUMNS = ["study", "model", "size", "batch", "ranks", "groups", "grid", "step_s", "compute_s",
           "halo_s", "allreduce_s", "io_s", "memory_mib", "samples_per_s", "halo_bytes",
           "allreduce_bytes", "layout", "redistribute_s", "redistribute_bytes"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--metrics", required=True)
    p.add_argument("--rss", default="", help="glob of per-rank peak-RSS files (KiB)")
    p.add_argument("--print-every", type=int, required=True, help="steps discarded as warm-up")
    p.add_argument("--csv", required=True, help="appended to; header written when new")
    for k in ["study", "model", "size", "batch", "ranks", "groups", "grid"]:
        p.add_argument("--" + k, required=True)
    p.add_argument("--layout", help="G:DxHxW[/K] (default groups:grid)")
    a = p.parse_args(argv)

    with open(a.metrics) as f:
        rows = [r for r in csv.DictReader(f) if r["kind"] == "train"]
    timed = [r for r in rows if int(r["step"]) > a.print_every]
    if not timed:
        print(f"summarize: {a.metrics}: no step after the first print interval; using all "
              f"{len(rows)}", file=sys.stderr)
        timed = rows
    if not timed:
        sys.exit(f"summarize: {a.metrics}: no train rows")
    # An empty field is nothing recorded: metrics.csv leaves the redistribution columns empty
    # where the model has no layer grids.
    col = lambda k: [float(r[k] or 0) for r in timed]
    phases = ["compute_s", "halo_s", "allreduce_s", "io_wait_s"]
    if "redistribute_s" in timed[0]:
        phases.append("redistribute_s")
    steps = [sum(float(r[k] or 0) for k in phases) for r in timed]
    step_s = statistics.median(steps)

    rss = []
    for path in glob.glob(a.rss) if a.rss else []:
        try:
            rss.append(int(open(path).read().split()[-1]))  # the last line: %M (a failing
        except (ValueError, IndexError):  # command's status line comes first)
            pass
    row = {k: getattr(a, k) for k in COLUMNS[:7]}
    row.update(step_s=f"{step_s:.6g}",
               compute_s=f"{statistics.median(col('compute_s')):.6g}",
               halo_s=f"{statistics.median(col('halo_s')):.6g}",
               allreduce_s=f"{statistics.median(col('allreduce_s')):.6g}",
               io_s=f"{statistics.median(col('io_wait_s')):.6g}",
               memory_mib=f"{max(rss) / 1024:.1f}" if rss else "",
               samples_per_s=f"{int(a.batch) / step_s:.6g}")
    for k in ["halo_bytes", "allreduce_bytes", "redistribute_bytes"]:
        row[k] = str(int(statistics.median(col(k)))) if k in timed[0] else ""
    row["layout"] = a.layout or f"{a.groups}:{a.grid}"
    row["redistribute_s"] = (f"{statistics.median(col('redistribute_s')):.6g}"
                             if "redistribute_s" in timed[0] else "")
    new = not os.path.exists(a.csv) or os.path.getsize(a.csv) == 0
    with open(a.csv, "a", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        if new:
            w.writeheader()
        w.writerow(row)
    print(",".join(row[k] for k in COLUMNS))


if __name__ == "__main__":
    main()
