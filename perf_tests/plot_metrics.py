#!/usr/bin/env python3
"""Plots any hybrid3d run's metrics.csv: training loss and validation metrics, learning rate,
samples/s, and where each step's time went (compute, halo, allreduce, I/O wait), against step.

  python3 perf_tests/plot_metrics.py RUN/metrics.csv [--out RUN/metrics.png] [--title TEXT]
                                    [--targets amplitude,slope,cutoff,growth]

Regression runs show the validation MSE per target (target_mse), segmentation runs the voxel
accuracy and the Dice score per class. Rows of a resumed run (steps seen twice) keep the last.
"""
import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    train, validation = {}, {}
    for r in rows:  # a restart repeats steps: the later row wins
        (train if r["kind"] == "train" else validation)[int(r["step"])] = r
    return [train[s] for s in sorted(train)], [validation[s] for s in sorted(validation)]


def column(rows, name):
    return [float(r[name]) if r.get(name) not in (None, "") else float("nan") for r in rows]


def split(rows, name):
    """'a/b/c' fields as one list per position."""
    parts = [r[name].split("/") for r in rows if r.get(name)]
    return [[float(p[i]) for p in parts] for i in range(len(parts[0]))] if parts else []


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("metrics")
    ap.add_argument("--out", help="image file (default: METRICS with .png)")
    ap.add_argument("--title", help="figure title (default: the file name)")
    ap.add_argument("--targets", help="names of the regression targets, comma-separated")
    a = ap.parse_args()
    train, val = read(a.metrics)
    if not train:
        raise SystemExit(f"{a.metrics}: no training rows")
    steps = [int(r["step"]) for r in train]
    vsteps = [int(r["step"]) for r in val]

    fig, ax = plt.subplots(2, 2, figsize=(11, 7))
    loss = ax[0][0]
    raw = column(train, "loss")
    loss.plot(steps, raw, lw=0.6, alpha=0.4, color="tab:blue", label="training loss")
    window = max(1, len(raw) // 25)  # a running mean shows the trend through the batch noise
    smooth = [sum(raw[max(0, i - window + 1):i + 1]) / (i + 1 - max(0, i - window + 1))
              for i in range(len(raw))]
    loss.plot(steps, smooth, color="tab:blue", label=f"training loss, mean of {window} steps")
    if val:
        loss.plot(vsteps, column(val, "loss"), "o-", label="validation loss")
        targets = split(val, "target_mse")
        names = a.targets.split(",") if a.targets else []
        for i, t in enumerate(targets):
            name = names[i] if i < len(names) else f"target {i}"
            loss.plot(vsteps, t, ".--", lw=0.8, label=f"validation MSE, {name}")
        if any(r.get("dice") for r in val):
            loss.plot(vsteps, column(val, "accuracy"), "s-", label="validation accuracy")
            for i, d in enumerate(split(val, "dice")):
                loss.plot(vsteps, d, ".--", lw=0.8, label=f"Dice, class {i}")
    loss.set_yscale("log")
    loss.set_xlabel("step")
    loss.set_title("loss and validation metrics")
    loss.legend(fontsize=7)

    lr = ax[0][1]
    lr.plot(steps, column(train, "learning_rate"), color="tab:green")
    lr.set_xlabel("step")
    lr.set_title("learning rate")

    rate = ax[1][0]
    rate.plot(steps, column(train, "samples_per_second"), color="tab:purple", lw=0.8)
    rate.set_xlabel("step")
    rate.set_ylim(bottom=0)
    rate.set_title("samples/s")

    phases = ax[1][1]
    names = [("compute_s", "compute"), ("halo_s", "halo"), ("allreduce_s", "allreduce"),
             ("io_wait_s", "I/O wait")]
    phases.stackplot(steps, [[1000 * v for v in column(train, c)] for c, _ in names],
                     labels=[n for _, n in names], alpha=0.8)
    phases.set_xlabel("step")
    phases.set_ylabel("ms per step (rank 0)")
    phases.set_title("where the step's time went")
    phases.legend(fontsize=7, loc="upper right")

    fig.suptitle(a.title or a.metrics)
    fig.tight_layout()
    out = a.out or a.metrics.rsplit(".", 1)[0] + ".png"
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
