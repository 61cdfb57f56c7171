#!/usr/bin/env python3
"""compare.py: the performance model's predictions beside the measurements (validate.sh).

Joins a scaling CSV (summarize.py: rank 0's median step, phases, bytes, peak RSS) with the
planner's CSV (`hybrid3d plan --csv`: the slowest rank's predicted step and phases, rank 0's
bytes, the largest rank's memory) on model, size, ranks and layout (G:DxHxW, /K on layer
grids), and prints a markdown table: per layout the predicted and measured step time and phases
with the error of the step, where every rank has a core of its own (ranks <= --cores;
oversubscribed runs share cores, so their times say nothing), and the halo, reduction and
redistribution bytes, which must be equal. Layouts only planned (no measurement) are listed
with their memory against the machine's.

  python3 compare.py --measured OUT/scaling.csv --predicted OUT/prediction.csv --cores 2
"""
import argparse
import csv
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def layout(r):
    """G:DxHxW[/K]; rows of CSVs older than the layout column: G:DxHxW."""
    return r.get("layout") or f"{r['groups']}:{r['grid']}"


def key(r, model_field):
    return (r[model_field], r["size"], r["ranks"], layout(r))


def shown(path):
    """A path as the table shows it: relative to the repository where it lies in it."""
    full = os.path.abspath(path)
    return os.path.relpath(full, ROOT) if full.startswith(ROOT + os.sep) else os.path.basename(path)


def ms(v):
    return f"{1e3 * float(v):.1f}" if v not in ("", None) else "-"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--measured", required=True)
    p.add_argument("--predicted", required=True)
    p.add_argument("--cores", type=int, required=True, help="ranks with a core of their own")
    p.add_argument("--machine", default="", help="shown in the title")
    a = p.parse_args(argv)
    measured = {key(r, "model"): r for r in csv.DictReader(open(a.measured))}
    predicted = [r for r in csv.DictReader(open(a.predicted))]

    print(f"# Performance model vs measurement{' (' + shown(a.machine) + ')' if a.machine else ''}\n")
    print("Times in ms per step (rank 0 measured, slowest rank predicted), predicted / measured; "
          "error of the step where every rank has its own core; bytes per step of rank 0.\n")
    print("| model | S | layout | step | error | compute | halo | allreduce | redistribute | I/O "
          "| halo bytes | reduction bytes | redistribution bytes | MiB per rank (plan / RSS) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    errors, staged_errors, byte_rows, byte_equal = [], [], 0, 0
    for r in predicted:
        m = measured.get(key(r, "architecture"))
        name = layout(r)
        moved = int(r.get("redistribute_bytes") or 0)
        if m is None:
            fits = "fits" if r["fits"] == "1" else "does not fit"
            print(f"| {r['architecture']} | {r['size']} | {name} | {ms(r['step_s'])} / not run "
                  f"| | | | | | | {int(r['halo_bytes']):,} / - | {int(r['allreduce_bytes']):,} / - "
                  f"| {moved:,} / - | {float(r['memory_mib']):.0f} / - ({fits}) |")
            continue
        own_cores = int(r["ranks"]) <= a.cores
        err = ""
        if own_cores:
            e = float(r["step_s"]) / float(m["step_s"]) - 1
            errors.append(abs(e))
            if "/" in name:
                staged_errors.append(abs(e))
            err = f"{100 * e:+.1f}%"
        else:
            err = "(oversubscribed)"
        phases = [f"{ms(r.get(k))} / {ms(m.get(k))}"
                  for k in ("compute_s", "halo_s", "allreduce_s", "redistribute_s", "io_s")]

        def count(row, k):
            return int(row.get(k) or 0)  # none recorded: none sent (older CSVs, one grid)

        def exact(k):
            if m.get(k, "") == "" and k != "redistribute_bytes":
                return f"{count(r, k):,} / -"
            return f"{count(r, k):,} / {count(m, k):,}" + (
                "" if count(r, k) == count(m, k) else " DIFFER")
        kinds = ("halo_bytes", "allreduce_bytes", "redistribute_bytes")
        if m.get("halo_bytes", ""):
            byte_rows += 1
            byte_equal += all(count(r, k) == count(m, k) for k in kinds)
        print(f"| {r['architecture']} | {r['size']} | {name} | {ms(r['step_s'])} / "
              f"{ms(m['step_s'])} | {err} | " + " | ".join(phases) + " | " +
              " | ".join(exact(k) for k in kinds) +
              f" | {float(r['memory_mib']):.0f} / {m['memory_mib'] or '-'} |")
    print()
    if errors:
        print(f"Step time: {len(errors)} layouts with a core per rank, largest error "
              f"{100 * max(errors):.1f}%, mean {100 * sum(errors) / len(errors):.1f}%.")
    if staged_errors:
        print(f"Of them on layer grids (G:DxHxW/K): {len(staged_errors)}, largest error "
              f"{100 * max(staged_errors):.1f}%.")
    print(f"Bytes: {byte_equal} of {byte_rows} measured layouts equal to the byte.")
    return 0 if byte_equal == byte_rows else 1


if __name__ == "__main__":
    sys.exit(main())
