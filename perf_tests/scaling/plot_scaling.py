#!/usr/bin/env python3
"""plot_scaling.py: speedup, parallel efficiency and phase split of a scaling study, as PNGs.

  python3 plot_scaling.py scaling_runs/scaling.csv [--prediction scaling_runs/prediction.csv] \
      --out plots/

Rows of the measurement CSV (strong.sh, weak.sh) fall into series: strong = one model, size
and mini-batch; weak = one model, size, grid and local batch; weak-spatial = one model and
local batch. Per series, throughput W = samples/s x S^3 (voxels per second), speedup =
W(N) / W(N0) against the series' fewest ranks N0, efficiency = speedup x N0 / N (strong: the
usual T(N0) N0 / (T(N) N); weak: voxels per second per rank against N0's). Two files per series:
  scaling_SERIES.png  speedup and efficiency against ranks (measured points; the plan's
                      prediction for the same layouts as a dashed line, from its own N0)
  phases_SERIES.png   median step time split into compute / halo / allreduce / io per layout
                      (stacked bars; predicted bars hatched beside them)
Prediction rows (`hybrid3d plan --csv`) match a measurement by architecture, size, batch,
ranks, groups and grid. Matplotlib only, Agg backend (no display needed).
"""
import argparse
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PHASES = [("compute_s", "compute"), ("halo_s", "halo"), ("allreduce_s", "allreduce"),
          ("io_s", "io")]
COLOURS = ["#4C72B0", "#DD8452", "#55A868", "#C44E52"]


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def series_key(r):
    s, m, S, b, g = r["study"], r["model"], r["size"], int(r["batch"]), int(r["groups"])
    if s == "strong":
        return f"{s}_{m}_s{S}_b{b}"
    if s == "weak-spatial":
        return f"{s}_{m}_lb{b // g}"
    return f"{s}_{m}_s{S}_{r['grid']}_lb{b // g}"


def layout_key(r, model_field="model"):
    return (r[model_field], int(r["size"]), int(r["batch"]), int(r["ranks"]), int(r["groups"]),
            r["grid"])


def throughput(r):
    return float(r["samples_per_s"]) * int(r["size"]) ** 3


def label(r):
    return f"{r['ranks']}\n{r['groups']}:{r['grid']}" + (
        "" if r["study"] == "strong" else f"\nS={r['size']}")


def plot_series(name, rows, pred, out):
    rows.sort(key=lambda r: (int(r["ranks"]), int(r["groups"])))
    n0 = int(rows[0]["ranks"])
    w0 = throughput(rows[0])
    ranks = [int(r["ranks"]) for r in rows]
    speed = [throughput(r) / w0 for r in rows]
    eff = [s * n0 / n for s, n in zip(speed, ranks)]
    matched = [pred.get(layout_key(r)) for r in rows]

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    a1.plot(ranks, speed, "o-", label="measured")
    a1.plot(ranks, [n / n0 for n in ranks], ":", color="grey", label="ideal")
    a2.plot(ranks, eff, "o-", label="measured")
    a2.axhline(1.0, ls=":", color="grey")
    have = [(n, p) for n, p in zip(ranks, matched) if p]
    top = max(eff)
    if have and matched[0]:
        p0 = throughput(matched[0])
        pr = [n for n, _ in have]
        ps = [throughput(p) / p0 for _, p in have]
        a1.plot(pr, ps, "x--", label="predicted (plan)")
        pe = [s * n0 / n for s, n in zip(ps, pr)]
        a2.plot(pr, pe, "x--", label="predicted (plan)")
        top = max(top, max(pe))
    elif have:
        print(f"plot_scaling: {name}: no prediction for the first layout; none drawn",
              file=sys.stderr)
    for a, y in ((a1, "speedup (throughput / first point's)"), (a2, "parallel efficiency")):
        a.set_xscale("log", base=2)
        a.set_xlabel("ranks")
        a.set_ylabel(y)
        a.set_xticks(sorted(set(ranks)))
        a.set_xticklabels([str(n) for n in sorted(set(ranks))])
        a.grid(alpha=0.3)
        a.legend()
    a2.set_ylim(0, max(1.1, top * 1.1))
    fig.suptitle(f"{name}  (against {n0} rank(s))")
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"scaling_{name}.png"), dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(rows) + 2), 4))
    width = 0.38 if any(matched) else 0.7
    for i, (r, p) in enumerate(zip(rows, matched)):
        for src, x, hatch in ((r, i - (width / 2 if p else 0), None), (p, i + width / 2, "//")):
            if not src:
                continue
            bottom = 0.0
            for (k, lab), c in zip(PHASES, COLOURS):
                v = float(src[k] or 0)
                ax.bar(x, v, width, bottom=bottom, color=c, hatch=hatch, edgecolor="white",
                       label=lab if i == 0 and hatch is None else None)
                bottom += v
            ax.text(x, bottom, f"{1e3 * bottom:.3g} ms", ha="center", va="bottom", fontsize=7)
    if any(matched):
        ax.bar(0, 0, 0, color="white", edgecolor="grey", hatch="//", label="predicted")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([label(r) for r in rows])
    ax.set_xlabel("ranks, groups:grid")
    ax.set_ylabel("seconds per step (median)")
    ax.set_title(f"{name}: step time by phase")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"phases_{name}.png"), dpi=100)
    plt.close(fig)
    return [f"scaling_{name}.png", f"phases_{name}.png"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("csv", help="measurements (strong.sh / weak.sh)")
    p.add_argument("--prediction", help="`hybrid3d plan --csv` rows")
    p.add_argument("--out", required=True, help="directory for the PNGs")
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    pred = {}
    if a.prediction:
        for r in read(a.prediction):
            # Rows planned without a machine file predict no time: nothing to draw.
            if float(r["samples_per_s"] or 0) > 0:
                pred[layout_key(r, "architecture")] = r  # the last row of a layout wins
    series = {}
    for r in read(a.csv):
        # A layout measured again replaces its earlier row.
        series.setdefault(series_key(r), {})[layout_key(r)] = r
    if not series:
        sys.exit(f"plot_scaling: {a.csv}: no rows")
    for name, rows in sorted(series.items()):
        for f in plot_series(name, list(rows.values()), pred, a.out):
            print(os.path.join(a.out, f))


if __name__ == "__main__":
    main()
