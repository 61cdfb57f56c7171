#!/usr/bin/env python3
"""make_deck.py: writes a hybrid3d training deck for one layout and size of a scaling study.

From a base deck (Teuchos XML) it sets the spatial grid, the input width, the global
mini-batch, the steps and the output directory, and points the data at a synthetic dataset
that `hybrid3d train` generates on first use (Data/Generate; a directory whose manifest.txt
exists is reused, so every run of one size shares it). Timing runs need no validation and no
checkpoints on the way: validation samples 0, one epoch, checkpoints only at the end.

  python3 make_deck.py --base inputs/cosmoflow_demo.xml --out run/deck.xml --grid 2x1x1 \
      --size 64 --batch 2 --steps 10 --print-every 2 --outdir run/out --data data/cosmoflow-64-20

--min-box-width K puts the layers on layer grids (Parallel/minimum box width K: each layer on the
finest coarsening of the grid whose input boxes are at least K wide).

The dataset holds --train-samples samples (default batch x steps: the run stays in epoch 1).
--print-generate prints, one word per line, the arguments of the `hybrid3d generate` that makes
the same dataset (so a script can make it in a launch of its own, outside the timed run).
"""
import argparse
import os
import re
import sys
import xml.etree.ElementTree as ET

GENERATOR = {"cosmoflow": "cosmology", "cosmoflow_mlperf": "cosmology", "unet3d": "segmentation"}


# Data/Generate/seed's default (`hybrid3d deck-help`), for base decks that leave it out.
DECK_DEFAULT_SEED = 7


def sublist(parent, name):
    for e in parent.findall("ParameterList"):
        if e.get("name") == name:
            return e
    return ET.SubElement(parent, "ParameterList", name=name)


def put(root, path, ptype, value):
    """Sets (or adds) the parameter at 'A/B/name'."""
    *lists, name = path.split("/")
    node = root
    for l in lists:
        node = sublist(node, l)
    for e in node.findall("Parameter"):
        if e.get("name") == name:
            e.set("type", ptype)
            e.set("value", str(value))
            return
    ET.SubElement(node, "Parameter", name=name, type=ptype, value=str(value))


def drop(root, path):
    *lists, name = path.split("/")
    node = root
    for l in lists:
        node = next((e for e in node.findall("ParameterList") if e.get("name") == l), None)
        if node is None:
            return
    for e in node.findall("Parameter"):
        if e.get("name") == name:
            node.remove(e)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--base", required=True, help="base deck (XML)")
    p.add_argument("--out", required=True, help="deck to write")
    p.add_argument("--model", help="Model/architecture (default: the base deck's)")
    p.add_argument("--grid", required=True, help="spatial grid DxHxW")
    p.add_argument("--min-box-width", type=int, default=0,
                   help="K > 0: Parallel/minimum box width (layer grids), replacing the base's")
    p.add_argument("--size", type=int, required=True, help="input width S (samples S^3)")
    p.add_argument("--batch", type=int, required=True, help="global mini-batch")
    p.add_argument("--steps", type=int, required=True, help="Training/max steps")
    p.add_argument("--print-every", type=int, default=1)
    p.add_argument("--outdir", required=True, help="Training/output directory")
    p.add_argument("--data", required=True, help="generated dataset directory (shared per size)")
    p.add_argument("--train-samples", type=int, help="default: batch x steps")
    p.add_argument("--print-generate", action="store_true",
                   help="print the matching `hybrid3d generate` arguments, one per line")
    a = p.parse_args(argv)
    if not re.fullmatch(r"\d+x\d+x\d+", a.grid):
        p.error(f"--grid {a.grid}: expected DxHxW")

    tree = ET.parse(a.base)
    root = tree.getroot()
    if a.model:
        put(root, "Model/architecture", "string", a.model)
    arch = next((e.get("value") for e in root.iter("Parameter") if e.get("name") == "architecture"), None)
    if arch not in GENERATOR:
        p.error(f"{a.base}: architecture {arch!r} has no synthetic generator")

    put(root, "Parallel/spatial grid", "string", a.grid)
    drop(root, "Parallel/data-parallel groups")  # the world size and the grid give the groups
    if a.min_box_width > 0:
        drop(root, "Parallel/layer grids")
        put(root, "Parallel/minimum box width", "int", a.min_box_width)
    put(root, "Model/input width", "int", a.size)
    # The generated dataset, not the base deck's files; no validation set.
    drop(root, "Data/train")
    drop(root, "Data/validation")
    put(root, "Data/Generate/generator", "string", GENERATOR[arch])
    put(root, "Data/Generate/directory", "string", os.path.abspath(a.data))
    put(root, "Data/Generate/train samples", "int", a.train_samples or a.batch * a.steps)
    # The seed written out: `hybrid3d generate` and the deck default to different seeds, and a
    # dataset generated with another seed than the deck names is refused.
    gen_seed = {e.get("name"): e.get("value")
                for e in sublist(sublist(root, "Data"), "Generate")}.get("seed", DECK_DEFAULT_SEED)
    put(root, "Data/Generate/seed", "int", gen_seed)
    put(root, "Data/Generate/validation samples", "int", 0)
    put(root, "Training/mini-batch", "int", a.batch)
    put(root, "Training/epochs", "int", 1)
    put(root, "Training/schedule", "string", "constant")  # a one-epoch run has no room for one
    put(root, "Training/warm-up epochs", "double", 0)
    put(root, "Training/max steps", "int", a.steps)
    put(root, "Training/print every", "int", a.print_every)
    put(root, "Training/checkpoint every", "int", 0)
    put(root, "Training/checkpoint minutes", "double", 0)
    put(root, "Training/output directory", "string", os.path.abspath(a.outdir))

    if hasattr(ET, "indent"):  # Python 3.9+
        ET.indent(tree, "  ")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        k = f", minimum box width {a.min_box_width}" if a.min_box_width > 0 else ""
        f.write(f"<!-- scaling deck: {a.base} with grid {a.grid}{k}, S={a.size}, mini-batch "
                f"{a.batch}, {a.steps} steps (perf_tests/scaling/make_deck.py) -->\n")
        f.write(ET.tostring(root, encoding="unicode") + "\n")
    if a.print_generate:
        gen = {e.get("name"): e.get("value") for e in sublist(sublist(root, "Data"), "Generate")}
        words = ["generate", gen["generator"], "--out", gen["directory"], "--size", str(a.size),
                 "--train", gen["train samples"], "--validation", "0"]
        if "seed" in gen:
            words += ["--seed", gen["seed"]]
        if "mean count" in gen and gen["generator"] == "cosmology":
            words += ["--mean-count", gen["mean count"]]
        print("\n".join(words))


if __name__ == "__main__":
    sys.exit(main())
