#!/usr/bin/env python3
"""projection_table.py: the tables of project.sh (markdown on stdout) from its CSVs in OUT.

  projection-PROBLEM-MACHINE.csv       the deck's layout of each rank count (one grid throughout)
  projection-PROBLEM-MACHINE-best.csv  the planner's best layout of each rank count
  projection-cosmoflow_512_2048-MACHINE.csv  the paper's 2048-GPU layout (layer grids)
  projection-PROBLEM-MACHINE-recompute-MODE.csv  the deck's layouts with Model/recompute MODE
                                       (none, all, auto) against project.sh's memory limit

First every row, with its phases (slowest rank, ms per step) and the speedup against the fewest
GPUs of its kind; then CosmoFlow 512^3 over 512 GPUs (the deck's layout, the paper's 512-GPU
split) at 1024 and 2048 beside the paper's 1.77x, each phase from 512 to there: what the
speedup is made of.

  python3 projection_table.py scaling_projection
"""
import csv
import glob
import os
import sys

PHASES = ["compute_s", "halo_s", "redistribute_s", "allreduce_s", "io_s"]
PAPER_SPEEDUP = 1.77  # CosmoFlow 512^3, mini-batch 64: 512 -> 2048 V100s (Oyama et al. 2021)


def rows(path):
    return list(csv.DictReader(open(path))) if os.path.exists(path) else []


def layout(r):
    return r.get("layout") or f"{r['groups']}:{r['grid']}"


def ms(r, k):
    return 1e3 * float(r.get(k) or 0)


def problem(r):
    # Rows of a 16-bit plan (project.sh's MACHINE-bfloat16 names) say their precision.
    precision = r.get("precision") or "float"
    return (f"{r['architecture']} {r['size']}^3, B {r['batch']}" +
            ("" if precision == "float" else f", {precision}"))


def main(argv):
    out = argv[1] if len(argv) > 1 else "scaling_projection"
    kinds = []  # (problem file, machine, kind, rows)
    for path in sorted(glob.glob(os.path.join(out, "projection-*.csv"))):
        name = os.path.basename(path)[len("projection-"):-len(".csv")]
        if name.startswith("cosmoflow_512_2048-") or "-recompute-" in name:
            continue
        best = name.endswith("-best")
        kinds.append((name[: -len("-best")] if best else name, "best" if best else "deck",
                      rows(path)))
    print("# The paper's problems, projected\n")
    print("`bash perf_tests/scaling/project.sh`: per GPU count the deck's layout (every layer on "
          "the spatial grid; `-` where it cannot run) and the planner's best (groups, spatial "
          "grid, layer grids: G:DxHxW/K = minimum box width K). Milliseconds per step of the "
          "slowest rank; speedup against the fewest GPUs of the same kind.\n")
    print("| problem | machine | GPUs | kind | layout | step ms | compute | halo | redistribute "
          "| allreduce | I/O | GiB per GPU | fits | speedup |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, kind, rs in sorted(kinds, key=lambda k: (k[0], k[1] != "deck")):
        rs = sorted(rs, key=lambda r: int(r["ranks"]))
        for r in rs:
            print(f"| {problem(r)} | {r['machine']} | {r['ranks']} | {kind} | {layout(r)} | "
                  f"{ms(r, 'step_s'):.1f} | " + " | ".join(f"{ms(r, k):.1f}" for k in PHASES) +
                  f" | {float(r['memory_mib']) / 1024:.1f} | {'yes' if r['fits'] == '1' else 'no'}"
                  f" | {float(rs[0]['step_s']) / float(r['step_s']):.2f}x |")

    print("\n## CosmoFlow 512^3 at mini-batch 64: over 512 GPUs, beside the paper's "
          f"{PAPER_SPEEDUP}x at 2048\n")
    print("Against the deck's 512-GPU layout (64 groups x 2x2x2, the paper's 8 GPUs per sample): "
          "each phase in ms at 512 -> here.\n")
    print("| machine | GPUs | layout | step ms | speedup | paper | compute | halo | redistribute "
          "| allreduce | I/O | GiB per GPU | fits |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, kind, rs in kinds:
        if not name.startswith("cosmoflow_512_mb64-") or kind != "deck":
            continue
        machine = name[len("cosmoflow_512_mb64-"):]
        base = next((r for r in rs if r["ranks"] == "512"), None)
        if base is None:
            continue
        best = next((k[2] for k in kinds if k[0] == name and k[1] == "best"), [])
        paper = rows(os.path.join(out, f"projection-cosmoflow_512_2048-{machine}.csv"))
        shown = [("deck", base)]
        shown += [("best", r) for r in best if int(r["ranks"]) >= 512]
        shown += [("paper's layout", r) for r in paper]
        for kind, r in shown:
            speedup = float(base["step_s"]) / float(r["step_s"])
            print(f"| {machine} | {r['ranks']} | {layout(r)} ({kind}) | {ms(r, 'step_s'):.1f} | "
                  f"{speedup:.2f}x | {f'{PAPER_SPEEDUP}x' if r['ranks'] == '2048' else ''} | " +
                  " | ".join(f"{ms(base, k):.1f} -> {ms(r, k):.1f}" for k in PHASES) +
                  f" | {float(r['memory_mib']) / 1024:.1f} | {'yes' if r['fits'] == '1' else 'no'} |")
    recomputation(out)
    return 0


def recomputation(out):
    """The rows of project.sh's recomputation block: per problem, GPU count and mode."""
    found = []
    for path in sorted(glob.glob(os.path.join(out, "projection-*-recompute-*.csv"))):
        mode = path[: -len(".csv")].rsplit("-recompute-", 1)[1]
        found += [(mode, r) for r in rows(path)]
    if not found:
        return
    order = {"none": 0, "all": 1, "auto": 2}
    found.sort(key=lambda k: (problem(k[1]), k[1]["machine"], int(k[1]["ranks"]),
                              order.get(k[0], 3)))
    print("\n## Activation recomputation: fewer GPUs per sample\n")
    print("The deck's layouts of fewer GPUs per sample than fit without recomputation, with "
          "`Model/recompute` none, all and auto (`hybrid3d plan --recompute MODE --memory-limit "
          "G`: project.sh's RECOMPUTE_LIMIT_GIB, 14500 MiB per GPU by default). MiB per GPU of "
          "the rank holding the most; ms per step of the slowest rank; recomputed: the "
          "segments (layer ranges) auto chose.\n")
    print("| problem | machine | GPUs | layout | recompute | recomputed | step ms | compute | "
          "halo | I/O | MiB per GPU | fits |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for mode, r in found:
        ranges = r.get("recompute") or "-"
        shown = {"none": "-", "all": "every segment"}.get(mode, ranges)
        if mode == "auto" and r["fits"] != "1":
            shown = "every segment: none fits"
        print(f"| {problem(r)} | {r['machine']} | {r['ranks']} | {layout(r)} | {mode} | "
              f"{shown.replace(';', ',')} | {ms(r, 'step_s'):.1f} | {ms(r, 'compute_s'):.1f} | "
              f"{ms(r, 'halo_s'):.1f} | {ms(r, 'io_s'):.1f} | {float(r['memory_mib']):.1f} | "
              f"{'yes' if r['fits'] == '1' else 'no'} |")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
