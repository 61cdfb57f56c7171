#!/usr/bin/env python3
"""The resolution study's figure: validation MSE against input resolution, one panel per target
and one for the total, every seed as a point and the seeds' mean as a line, with the MSE of
predicting the mean dashed. Several studies (say, two training lengths) share the panels, one
colour each.

  plot_resolution.py OUT/resolution.csv [MORE.csv ...] [--labels "4 epochs,8 epochs"]
                     [--manifest FULL/manifest.txt] [--out resolution.png]
"""
import argparse
import csv
import os
import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from summarize import baseline, read_manifest  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--labels", help="one per CSV, comma-separated (default: the file names)")
    ap.add_argument("--manifest", help="adds the MSE of predicting the mean")
    ap.add_argument("--out", default="resolution.png")
    a = ap.parse_args()
    studies = []
    labels = a.labels.split(",") if a.labels else a.csv
    for path, label in zip(a.csv, labels):
        with open(path) as f:
            studies.append((label, list(csv.DictReader(f))))
    targets = [c[4:] for c in studies[0][1][0] if c.startswith("mse_")]
    base = None
    if a.manifest:
        names, unit = read_manifest(a.manifest)
        b = baseline(unit)
        base = dict(zip(names, b), total=statistics.fmean(b))
    panels = ["total"] + targets
    widths = sorted({int(r["width"]) for _, rows in studies for r in rows})
    fig, axes = plt.subplots(1, len(panels), figsize=(3.1 * len(panels), 3.2), sharey=False)
    for ax, p in zip(axes, panels):
        col = "mse" if p == "total" else f"mse_{p}"
        for (label, rows), colour in zip(studies, ["tab:blue", "tab:orange", "tab:green"] * 9):
            mine = sorted({int(r["width"]) for r in rows})
            for w in mine:
                v = [float(r[col]) for r in rows if int(r["width"]) == w]
                ax.scatter([w] * len(v), v, color=colour, s=18, alpha=0.7)
            means = [statistics.fmean(float(r[col]) for r in rows if int(r["width"]) == w)
                     for w in mine]
            ax.plot(mine, means, "-o", color=colour, label=f"{label}: mean over seeds")
        if base:
            ax.axhline(base[p], ls="--", color="gray", label="predicting the mean")
        ax.set_xscale("log", base=2)
        ax.set_xticks(widths)
        ax.set_xticklabels([f"{w}^3" for w in widths])
        ax.set_ylim(bottom=0)
        ax.set_title(p)
        ax.set_xlabel("input resolution")
    axes[0].set_ylabel("validation MSE")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    os.sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
