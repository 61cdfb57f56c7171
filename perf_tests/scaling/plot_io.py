#!/usr/bin/env python3
"""plot_io.py: io_scaling.sh's CSV as OUT/io_scaling.png: read time per sample against ranks
(collective and independent, cold and warm page cache) and the I/O left exposed per step with
prefetch off and on, one line per sample size. Matplotlib, Agg backend.

  python3 plot_io.py scaling_runs/io.csv --out scaling_runs
"""
import argparse
import csv
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("csv")
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    with open(a.csv) as f:
        rows = list(csv.DictReader(f))
    sizes = sorted({int(r["size"]) for r in rows})
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for s in sizes:
        rs = sorted((r for r in rows if int(r["size"]) == s), key=lambda r: int(r["ranks"]))
        n = [int(r["ranks"]) for r in rs]
        for key, style in (("collective_cold_s", "o-"), ("independent_cold_s", "s-"),
                           ("collective_warm_s", "o:"), ("independent_warm_s", "s:")):
            a1.plot(n, [1e3 * float(r[key]) for r in rs], style,
                    label=f"{s}^3 {key[:-2].replace('_', ' ')}")
        if all(r.get("model_read_s") for r in rs):  # io_scaling.sh --machine
            a1.plot(n, [1e3 * float(r["model_read_s"]) for r in rs], "k--", lw=1,
                    label=f"{s}^3 model (machine file)")
        a2.plot(n, [1e3 * float(r["exposed_off_s"]) for r in rs], "o-", label=f"{s}^3 prefetch off")
        a2.plot(n, [1e3 * float(r["exposed_on_s"]) for r in rs], "x--", label=f"{s}^3 prefetch on")
    ranks = sorted({int(r["ranks"]) for r in rows})
    for ax, y in ((a1, "ms per sample (slowest rank)"), (a2, "exposed I/O ms per step")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ranks)
        ax.set_xticklabels([str(n) for n in ranks])
        ax.set_xlabel("ranks (one sample split over all)")
        ax.set_ylabel(y)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    a1.set_title("read time per sample")
    a2.set_title("I/O wait per step")
    fig.tight_layout()
    path = os.path.join(a.out, "io_scaling.png")
    fig.savefig(path, dpi=100)
    print(path)


if __name__ == "__main__":
    main()
