#!/usr/bin/python3
"""The inference reference for `hybrid3d predict` (issue 37): a checkpoint's model applied by
PyTorch in float64 to already preprocessed inputs. Test tooling, never in the training path.

  /usr/bin/python3 make_predict_reference.py CHECKPOINT.h5 INPUT.h5 OUT.h5 [--mode eval|train]

CHECKPOINT.h5: what `hybrid3d train` writes (docs/checkpoints.md): the deck in the root attribute
`deck` (Model/architecture, Model/input width, Model/dropout keep probability are read) and the
parameters and batch-norm buffers in `/model/<layer>/<param>` with PyTorch shapes. The model is
built from unit_tests/reference/torch_models.py (the project's models exactly), every one of its
tensors taken from the checkpoint, and every checkpoint tensor must be used.

INPUT.h5: `/input` [N,C,D,H,W], the model's input after the deck's preprocessing (log1p, channel
offset and scale). Regression models need D = H = W = the deck's input width; the U-Net takes any
D, H, W that are multiples of 8.

OUT.h5 (written to a temporary name, then renamed): `/output` float64, [N,outputs] for
regression, [N,classes,D,H,W] logits for segmentation; root attributes `architecture`,
`input_width`, `mode`, `checkpoint` (the file's name only) and `torch_version`.

--mode eval (the default): batch norm with the running statistics, no dropout: what predict
computes. --mode train: batch norm with the batch's statistics, what one forward of
`hybrid3d gradients` writes to its /output: it checks the weight mapping against hybrid3d itself
(dropout must be off: Model/dropout keep probability 1 in the deck, or a model without dropout).
"""
import argparse
import os
import sys
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch_models  # noqa: E402

SEGMENTATION = {"unet3d"}


def stop(path, message):
    """One line naming the file, non-zero exit."""
    sys.exit(f"make_predict_reference: {path}: {message}")


def deck_model_keys(checkpoint, deck_text):
    """{key: value} of the deck's Model list (Teuchos XML), values as written."""
    try:
        root = ET.fromstring(deck_text)
    except ET.ParseError as e:
        stop(checkpoint, f"the 'deck' attribute is not XML ({e})")
    for plist in root.iter("ParameterList"):
        if plist.get("name") == "Model":
            return {p.get("name"): p.get("value") for p in plist.findall("Parameter")}
    stop(checkpoint, "the deck has no Model list")


def read_checkpoint(path):
    """(architecture, input width, dropout keep or None, {'layer/param': float64 array})."""
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        stop(path, f"cannot open ({e})")
    with f:
        if "deck" not in f.attrs:
            stop(path, "no 'deck' attribute: not a hybrid3d checkpoint")
        deck = f.attrs["deck"]
        model = deck_model_keys(path, deck.decode() if isinstance(deck, bytes) else str(deck))
        if "model" not in f:
            stop(path, "no /model group")
        tensors = {}
        f["model"].visititems(lambda name, obj: tensors.__setitem__(name, np.asarray(obj, np.float64))
                              if isinstance(obj, h5py.Dataset) else None)
    if "architecture" not in model:
        stop(path, "the deck has no Model/architecture")
    try:
        width = int(model.get("input width", "128"))  # the deck's default (docs/decks.md)
        keep = float(model["dropout keep probability"]) if "dropout keep probability" in model else None
    except ValueError as e:
        stop(path, f"a Model key of the deck is not a number ({e})")
    return model["architecture"], width, keep, tensors


def load_weights(model, tensors, path):
    """Every parameter and buffer of `model` from the checkpoint's tensors, shapes checked; a
    checkpoint tensor the model does not have is an error too (another architecture's)."""
    used = set()
    state = model.state_dict()
    for name, value in state.items():
        key = torch_models.checkpoint_name(name)
        if key is None:
            continue
        if key not in tensors:
            stop(path, f"/model/{key} is missing")
        if tuple(tensors[key].shape) != tuple(value.shape):
            stop(path, f"/model/{key} has shape {list(tensors[key].shape)}, the model's is {list(value.shape)}")
        state[name] = torch.from_numpy(tensors[key])
        used.add(key)
    unused = sorted(set(tensors) - used)
    if unused:
        stop(path, f"/model/{unused[0]} belongs to no layer of the model ({len(unused)} such)")
    model.load_state_dict(state)


def read_input(path, architecture, width, channels):
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        stop(path, f"cannot open ({e})")
    with f:
        if "input" not in f:
            stop(path, "no /input dataset")
        x = np.asarray(f["input"], np.float64)
    if x.ndim != 5 or x.shape[1] != channels:
        stop(path, f"/input has shape {list(x.shape)}: expected [N,{channels},D,H,W]")
    extents = x.shape[2:]
    if architecture in SEGMENTATION:
        if any(e % 8 for e in extents):
            stop(path, f"/input extents {list(extents)} are not multiples of 8 ({architecture})")
    elif extents != (width,) * 3:
        stop(path, f"/input extents {list(extents)} differ from the deck's input width {width}")
    if not np.isfinite(x).all():
        stop(path, "/input holds a non-finite value")
    return torch.from_numpy(x)


def write_output(path, output, attrs):
    tmp = os.path.join(os.path.dirname(os.path.abspath(path)), "." + os.path.basename(path) + ".tmp")
    with h5py.File(tmp, "w") as f:
        f.create_dataset("output", data=output)
        for k, v in attrs.items():
            f.attrs[k] = str(v) if isinstance(v, str) else v  # torch's version is a str subclass
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("input")
    ap.add_argument("out")
    ap.add_argument("--mode", choices=["eval", "train"], default="eval")
    a = ap.parse_args()

    architecture, width, keep, tensors = read_checkpoint(a.checkpoint)
    if architecture not in torch_models.ARCHITECTURES:
        stop(a.checkpoint, f"Model/architecture '{architecture}' is not one of "
                           f"{', '.join(torch_models.ARCHITECTURES)}")
    model = torch_models.build(architecture, width, keep).double()
    has_dropout = any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in model.modules())
    if a.mode == "train" and has_dropout:
        stop(a.checkpoint, "--mode train needs dropout off (Model/dropout keep probability 1 in the "
                           "deck): its masks are random")
    load_weights(model, tensors, a.checkpoint)
    x = read_input(a.input, architecture, width, model.input_channels)

    model.train(a.mode == "train")
    with torch.no_grad():
        y = model(x)
    if not torch.isfinite(y).all():
        stop(a.input, "the model's output holds a non-finite value")
    write_output(a.out, y.numpy(), {
        "architecture": architecture, "input_width": width, "mode": a.mode,
        "checkpoint": os.path.basename(a.checkpoint), "torch_version": torch.__version__})
    print(f"make_predict_reference: {architecture}, {x.shape[0]} input(s) {list(x.shape[1:])} -> "
          f"/output {list(y.shape)} ({a.mode} mode) in {a.out}")


if __name__ == "__main__":
    main()
