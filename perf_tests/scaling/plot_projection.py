#!/usr/bin/env python3
"""plot_projection.py: `hybrid3d plan --csv` rows of several rank counts (project.sh) as
OUT/projection.png: per problem and machine, the predicted speedup of the step against the
fewest ranks (left) and the predicted step split into compute / halo / allreduce / I/O per
rank count (right, one group of bars per machine). Matplotlib, Agg backend.

  python3 plot_projection.py scaling_projection/projection-*-best.csv --out scaling_projection \
      --label "planner's best layouts"
"""
import argparse
import csv
import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PHASES = [("compute_s", "compute"), ("halo_s", "halo"), ("redistribute_s", "redistribute"),
          ("allreduce_s", "allreduce"), ("io_s", "I/O")]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("csv", nargs="+")
    p.add_argument("--out", required=True)
    p.add_argument("--label", default="deck's layouts", help="what the rows' layouts are")
    a = p.parse_args(argv)
    series = defaultdict(list)  # (architecture, size, batch, machine) -> rows by ranks
    for path in a.csv:
        for r in csv.DictReader(open(path)):
            precision = r.get("precision") or "float"  # a 16-bit plan: a series of its own
            machine = r["machine"] + ("" if precision == "float" else f" {precision}")
            series[(r["architecture"], r["size"], r["batch"], machine)].append(r)
    problems = sorted({k[:3] for k in series})
    fig, axes = plt.subplots(len(problems), 2, figsize=(12, 4 * len(problems)), squeeze=False)
    for row, problem in enumerate(problems):
        left, right = axes[row]
        machines = sorted(k[3] for k in series if k[:3] == problem)
        width = 0.8 / len(machines)
        for i, m in enumerate(machines):
            rs = sorted(series[problem + (m,)], key=lambda r: int(r["ranks"]))
            n = [int(r["ranks"]) for r in rs]
            t = [float(r["step_s"]) for r in rs]
            left.plot(n, [t[0] / x for x in t], "o-", label=f"{m} ({a.label})")
            bottom = [0.0] * len(rs)
            for j, (key, name) in enumerate(PHASES):
                v = [1e3 * float(r.get(key) or 0) for r in rs]
                right.bar([k + (i - (len(machines) - 1) / 2) * width for k in range(len(rs))], v,
                          width, bottom=bottom, color=f"C{j}", hatch="//" if i else None,
                          label=name if i == 0 else None, edgecolor="white")
                bottom = [b + x for b, x in zip(bottom, v)]
            for k, (b, r) in enumerate(zip(bottom, rs)):
                layout = r.get("layout") or f"{r['groups']}:{r['grid']}"
                right.text(k + (i - (len(machines) - 1) / 2) * width, b, f"{m}\n{layout}",
                           ha="center", va="bottom", fontsize=6)
            right.set_xticks(range(len(rs)))
            right.set_xticklabels([str(x) for x in n])
        ranks = sorted({int(r["ranks"]) for m in machines for r in series[problem + (m,)]})
        left.plot(ranks, [x / ranks[0] for x in ranks], ":", color="grey", label="ideal")
        left.set_xscale("log", base=2)
        left.set_xticks(ranks)
        left.set_xticklabels([str(x) for x in ranks])
        left.set_xlabel("GPUs (ranks)")
        left.set_ylabel("predicted speedup")
        left.legend(fontsize=8)
        left.grid(alpha=0.3)
        arch, size, batch = problem
        left.set_title(f"{arch} {size}^3, mini-batch {batch}: strong scaling")
        right.set_xlabel("GPUs (ranks); bars: machines, labels: the layout G:DxHxW[/K]")
        right.set_ylabel("predicted ms per step")
        right.set_title("predicted step by phase")
        right.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(a.out, "projection.png")
    fig.savefig(path, dpi=100)
    print(path)


if __name__ == "__main__":
    main()
