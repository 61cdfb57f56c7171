#!/usr/bin/env python3
"""The resolution study's table: for every run of runs.csv its final validation MSE per target
and in total (the last validation row of the run's metrics.csv), then per resolution the mean
and the spread over seeds, beside the MSE of predicting the training targets' mean.

  summarize.py --runs OUT/runs.csv --manifest FULL/manifest.txt --out OUT [--check-loss-falls]

Writes OUT/resolution.csv (one row per run) and OUT/resolution.md (the table of docs/resolution.md), and
prints the table. --check-loss-falls (the CI smoke test) exits non-zero unless every run's mean
training loss over its last epoch is below that over its first.
"""
import argparse
import csv
import os
import statistics
import sys


def read_manifest(path):
    """Target names and the unit targets of the train and validation samples."""
    names, unit = [], {"train": [], "validation": []}
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w or w[0].startswith("#"):
                continue
            if w[0] == "parameter":
                names.append(w[1])
            elif w[0] == "sample" and w[1] in unit:
                unit[w[1]].append([float(v) for v in w[-len(names):]])
    return names, unit


def baseline(unit):
    """Per target: the validation MSE of always predicting the training set's mean."""
    out = []
    for t in range(len(unit["train"][0])):
        mean = statistics.fmean(u[t] for u in unit["train"])
        out.append(statistics.fmean((u[t] - mean) ** 2 for u in unit["validation"]))
    return out


def metrics(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def final_validation(rows, path):
    v = [r for r in rows if r["kind"] == "validation"]
    if not v or not v[-1].get("target_mse"):
        sys.exit(f"{path}: no validation row with target_mse")
    return float(v[-1]["mse"]), [float(x) for x in v[-1]["target_mse"].split("/")]


def loss_falls(rows):
    train = [r for r in rows if r["kind"] == "train"]
    first, last = train[0]["epoch"], train[-1]["epoch"]
    mean = lambda e: statistics.fmean(float(r["loss"]) for r in train if r["epoch"] == e)
    return mean(first), mean(last)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--check-loss-falls", action="store_true")
    a = ap.parse_args()
    names, unit = read_manifest(a.manifest)
    base = baseline(unit)
    with open(a.runs) as f:
        runs = list(csv.DictReader(f))
    if not runs:
        sys.exit(f"{a.runs}: no runs")

    rows, falling = [], True
    for r in runs:
        path = os.path.join(r["run"], "metrics.csv")
        m = metrics(path)
        total, per = final_validation(m, path)
        first, last = loss_falls(m)
        falling &= last < first
        rows.append({"factor": int(r["factor"]), "width": int(r["width"]), "seed": int(r["seed"]),
                     "wall_s": float(r["wall_s"]), "train_loss_first_epoch": first,
                     "train_loss_last_epoch": last, "mse": total,
                     **{f"mse_{n}": v for n, v in zip(names, per)}})
        print(f"{os.path.basename(r['run'])}: training loss {first:.4f} -> {last:.4f}, "
              f"validation MSE {total:.4f}, {float(r['wall_s']):.0f} s")
    rows.sort(key=lambda x: (x["factor"], x["seed"]))
    with open(os.path.join(a.out, "resolution.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)

    cols = ["mse"] + [f"mse_{n}" for n in names]
    lines = ["| input | seeds | " + " | ".join(["total"] + names) + " | wall time per run |",
             "|---" * (len(cols) + 3) + "|"]
    for factor in sorted({x["factor"] for x in rows}):
        g = [x for x in rows if x["factor"] == factor]
        cell = lambda c: (f"{statistics.fmean(x[c] for x in g):.4f} "
                          f"({min(x[c] for x in g):.4f}-{max(x[c] for x in g):.4f})")
        label = f"{g[0]['width']}^3" + (" (full)" if factor == 1 else f" (/{factor})")
        walls = ", ".join(f"{x['wall_s']:.0f} s" for x in g)
        lines.append(f"| {label} | {len(g)} | " + " | ".join(cell(c) for c in cols) + f" | {walls} |")
    factors = sorted({x["factor"] for x in rows})
    if len(factors) > 1 and factors[0] == 1:
        # The study's question: the full resolution's MSE as a fraction of the coarsest's.
        mean = lambda f, c: statistics.fmean(x[c] for x in rows if x["factor"] == f)
        lines.append(f"| full / (/{factors[-1]}) | | " + " | ".join(
            f"{mean(1, c) / mean(factors[-1], c):.2f}" for c in cols) + " | |")
    lines.append("| predicting the mean | | " + " | ".join(
        f"{v:.4f}" for v in [statistics.fmean(base)] + base) + " | |")
    table = "\n".join(lines)
    with open(os.path.join(a.out, "resolution.md"), "w") as f:
        f.write("Validation MSE after the last epoch, mean over seeds (min-max); targets in "
                "[-1, 1].\n\n" + table + "\n")
    print(table)
    if a.check_loss_falls and not falling:
        sys.exit("summarize.py: a run's training loss did not fall (see the lines above)")


if __name__ == "__main__":
    main()
