#!/usr/bin/env python3
"""Pictures of a `hybrid3d predict` output directory (issue 37).

  python3 perf_tests/plot_predictions.py OUT_DIR [--images PATH...] [--labels DIR]
                                         [--out-dir DIR] [--title TEXT] [--max-volumes N]

Regression (OUT_DIR/predictions.csv): one scatter per target of the prediction against the
truth (the true_<name> columns) with the identity line and the MSE, in predictions.png; without
true_ columns, a histogram of each target's predictions instead.

Segmentation (OUT_DIR/NAME.nii.gz or NAME.h5 with /prediction): NAME.png per volume, three
orthogonal central slices (D, H, W) of the image with the truth (top row, where known) and the
prediction (bottom row) overlaid, one colour per class, background clear. The images are the
paths given to predict's --in (files or directories; matched to NAME by file name); an HDF5
sample brings its own truth (/segmentation), NIfTI images find theirs in --labels DIR under the
image's file name (as `hybrid3d import nifti` pairs them). A volume without an image is drawn
on a blank background. OUT_DIR/metrics.csv's mean_foreground_dice, where present, goes in the
title. Axes: [D, H, W] = NIfTI's (k, j, i), as hybrid3d reads them.
"""
import argparse
import csv
import gzip
import os
import struct

import h5py
import numpy as np

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

NIFTI_SUFFIXES = (".nii.gz", ".nii")
HDF5_SUFFIXES = (".h5", ".hdf5")
# NIfTI datatype code -> numpy type (the real ones: what hybrid3d reads).
NIFTI_TYPES = {2: "u1", 4: "i2", 8: "i4", 16: "f4", 64: "f8", 256: "i1", 512: "u2", 768: "u4",
               1024: "i8", 1280: "u8"}


def stem(path):
    """File name without .nii.gz, .nii, .h5 or .hdf5."""
    name = os.path.basename(path)
    for s in NIFTI_SUFFIXES + HDF5_SUFFIXES:
        if name.endswith(s):
            return name[:-len(s)]
    return name


def read_nifti(path):
    """[C, D, H, W] float64 of a NIfTI-1 or -2 file (.nii or .nii.gz, either byte order), scaled
    by scl_slope / scl_inter where the slope is not 0: as hybrid3d's NiftiVolume reads it."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    for order in "<>":
        size = struct.unpack(order + "i", raw[:4])[0]
        if size in (348, 540):
            break
    else:
        raise SystemExit(f"{path}: not a NIfTI-1 or NIfTI-2 file")
    if size == 348:
        dim = struct.unpack(order + "8h", raw[40:56])
        code = struct.unpack(order + "h", raw[70:72])[0]
        offset = int(struct.unpack(order + "f", raw[108:112])[0])
        slope, inter = struct.unpack(order + "2f", raw[112:120])
    else:
        code = struct.unpack(order + "h", raw[12:14])[0]
        dim = struct.unpack(order + "8q", raw[16:80])
        offset = struct.unpack(order + "q", raw[168:176])[0]
        slope, inter = struct.unpack(order + "2d", raw[176:192])
    if code not in NIFTI_TYPES or not 3 <= dim[0] <= 4:
        raise SystemExit(f"{path}: NIfTI datatype {code} with {dim[0]} dimensions is not read here")
    shape = [max(1, d) for d in dim[1:dim[0] + 1]] + [1] * (4 - dim[0])  # i, j, k, t
    dtype = np.dtype(order + NIFTI_TYPES[code])
    count = int(np.prod(shape))
    if len(raw) < offset + count * dtype.itemsize:
        raise SystemExit(f"{path}: the header promises more voxels than the file holds")
    v = np.frombuffer(raw, dtype, count, offset).astype(np.float64).reshape(shape[::-1])
    return v * slope + inter if slope != 0 else v


def read_volume(path, dataset):
    """[C, D, H, W] of an HDF5 dataset ([D, H, W] gains C = 1) or of a NIfTI file."""
    if path.endswith(NIFTI_SUFFIXES):
        return read_nifti(path)
    with h5py.File(path, "r") as f:
        if dataset not in f:
            raise SystemExit(f"{path}: no /{dataset}")
        v = np.asarray(f[dataset], np.float64)
    return v[None] if v.ndim == 3 else v


def list_images(paths):
    """NAME -> image file, from --images files and directories."""
    images = {}
    for p in paths:
        files = [os.path.join(p, n) for n in sorted(os.listdir(p))] if os.path.isdir(p) else [p]
        for f in files:
            if f.endswith(NIFTI_SUFFIXES + HDF5_SUFFIXES) and not os.path.basename(f).startswith("."):
                images[stem(f)] = f
    return images


def truth_of(image, labels_dir):
    """[D, H, W] class labels of an image where known: an HDF5 sample's /segmentation, else the
    --labels file of the image's name (or of its NAME with another suffix); else None."""
    if image and image.endswith(HDF5_SUFFIXES):
        with h5py.File(image, "r") as f:
            if "segmentation" in f:
                return np.asarray(f["segmentation"])
    if not labels_dir:
        return None
    names = ([os.path.basename(image)] if image else []) + \
        [stem(image or "") + s for s in NIFTI_SUFFIXES + HDF5_SUFFIXES]
    for n in names:
        p = os.path.join(labels_dir, n)
        if os.path.isfile(p):
            return read_volume(p, "segmentation")[0]
    return None


def plot_regression(out_dir, dest, title):
    with open(os.path.join(out_dir, "predictions.csv")) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"{out_dir}/predictions.csv: no rows")
    names = [c for c in rows[0] if c != "file" and not c.startswith("true_")]
    fig, ax = plt.subplots(1, len(names), figsize=(3.6 * len(names), 3.6), squeeze=False)
    for a, name in zip(ax[0], names):
        pred = np.array([float(r[name]) for r in rows])
        if "true_" + name in rows[0]:
            true = np.array([float(r["true_" + name]) for r in rows])
            lo, hi = min(true.min(), pred.min()), max(true.max(), pred.max())
            a.plot([lo, hi], [lo, hi], color="grey", lw=0.8, label="identity")
            a.scatter(true, pred, s=12, alpha=0.7, color="tab:blue",
                      label=f"MSE {np.mean((pred - true) ** 2):.3g}")
            a.set_xlabel(f"true {name}")
            a.set_ylabel(f"predicted {name}")
            a.set_aspect("equal", adjustable="datalim")
            a.legend(fontsize=7)
        else:
            a.hist(pred, bins=max(5, len(pred) // 4), color="tab:blue")
            a.set_xlabel(f"predicted {name} (no truth)")
        a.set_title(name)
    fig.suptitle(title or f"{out_dir}: {len(rows)} volume(s)")
    fig.tight_layout()
    path = os.path.join(dest, "predictions.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


def central_slices(v):
    """The three orthogonal central slices of a [D, H, W] array: across D, H and W."""
    d, h, w = (e // 2 for e in v.shape)
    return [v[d, :, :], v[:, h, :], v[:, :, w]]


def overlay(ax, image, labels, classes, name):
    """A grey image slice with the foreground labels over it (class 0 clear)."""
    colours = plt.get_cmap("tab10")(np.arange(max(classes, 2)) % 10)
    colours[0, 3] = 0
    if image is not None:
        ax.imshow(image, cmap="gray", origin="lower")
    ax.imshow(labels, cmap=ListedColormap(colours), vmin=-0.5, vmax=len(colours) - 0.5,
              alpha=0.45 if image is not None else 1.0, origin="lower", interpolation="nearest")
    ax.set_title(name, fontsize=8)
    ax.set_xticks([])
    ax.set_yticks([])


def dice_of(out_dir):
    """file name -> mean_foreground_dice of OUT_DIR/metrics.csv (empty where it is missing)."""
    path = os.path.join(out_dir, "metrics.csv")
    if not os.path.isfile(path):
        return {}
    with open(path) as f:
        return {stem(r["file"]): r["mean_foreground_dice"] for r in csv.DictReader(f)
                if r.get("mean_foreground_dice")}


def predictions_of(out_dir):
    """NAME -> prediction file (NAME.nii.gz, or NAME.h5 holding /prediction)."""
    found = {}
    for n in sorted(os.listdir(out_dir)):
        p = os.path.join(out_dir, n)
        if n.endswith(NIFTI_SUFFIXES) and not stem(n).endswith("_probabilities"):
            found[stem(n)] = p
        elif n.endswith(HDF5_SUFFIXES):
            with h5py.File(p, "r") as f:
                if "prediction" in f:
                    found[stem(n)] = p
    return found


def plot_volume(name, prediction, image_path, labels_dir, dice, dest, title):
    pred = read_volume(prediction, "prediction")[0].astype(np.int64)
    image = read_volume(image_path, "volume")[0] if image_path else None
    truth = truth_of(image_path, labels_dir)
    for what, v in (("image", image), ("truth", truth)):
        if v is not None and v.shape != pred.shape:
            raise SystemExit(f"{prediction}: prediction {list(pred.shape)} and {what} "
                             f"{list(v.shape)} ({image_path or labels_dir}) differ in shape")
    classes = int(max(pred.max(), truth.max() if truth is not None else 0)) + 1
    rows = [("truth", truth)] if truth is not None else []
    rows.append(("prediction", pred))
    fig, ax = plt.subplots(len(rows), 3, figsize=(9, 3.1 * len(rows)), squeeze=False)
    axes = [f"{a} = {e // 2}" for a, e in zip("DHW", pred.shape)]
    images = central_slices(image) if image is not None else [None] * 3
    for r, (kind, labels) in enumerate(rows):
        for c, (img, lab) in enumerate(zip(images, central_slices(labels))):
            overlay(ax[r][c], img, lab, classes, f"{kind}, {axes[c]}")
    colours = plt.get_cmap("tab10")(np.arange(1, classes) % 10)
    fig.legend(handles=[Patch(color=c, label=f"class {k}") for k, c in enumerate(colours, start=1)],
               loc="lower center", ncol=classes - 1, fontsize=8, frameon=False)
    heading = title or name
    if name in dice:
        heading += f" (mean foreground Dice {float(dice[name]):.3f})"
    fig.suptitle(heading)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    path = os.path.join(dest, name + ".png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_segmentation(out_dir, images, labels_dir, dest, title, limit):
    found = predictions_of(out_dir)
    if not found:
        raise SystemExit(f"{out_dir}: neither predictions.csv nor a segmentation prediction")
    dice = dice_of(out_dir)
    return [plot_volume(name, p, images.get(name), labels_dir, dice, dest, title)
            for name, p in list(found.items())[:limit]]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("out_dir", help="predict's --out directory")
    ap.add_argument("--images", nargs="+", default=[], help="predict's --in paths (segmentation)")
    ap.add_argument("--labels", help="predict's --labels directory (NIfTI truth)")
    ap.add_argument("--out-dir", dest="dest", help="where the PNGs go (default: OUT_DIR)")
    ap.add_argument("--title", help="figure title (default: the directory or volume name)")
    ap.add_argument("--max-volumes", type=int, default=16, help="segmentation: at most N pictures")
    a = ap.parse_args()
    if not os.path.isdir(a.out_dir):
        raise SystemExit(f"{a.out_dir}: not a directory")
    for p in a.images + ([a.labels] if a.labels else []):
        if not os.path.exists(p):
            raise SystemExit(f"{p}: no such file or directory")
    dest = a.dest or a.out_dir
    os.makedirs(dest, exist_ok=True)
    if os.path.isfile(os.path.join(a.out_dir, "predictions.csv")):
        written = plot_regression(a.out_dir, dest, a.title)
    else:
        written = plot_segmentation(a.out_dir, list_images(a.images), a.labels, dest, a.title,
                                    a.max_volumes)
    for w in written:
        print(f"wrote {w}")


if __name__ == "__main__":
    main()
