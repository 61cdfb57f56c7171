#!/usr/bin/env python3
"""Checks on `hybrid3d predict`'s outputs for the command-line tests (PredictIsTheSameOnEveryGrid,
PredictSegmentationIsTheSameOnEveryGrid, PredictEqualsPyTorch). Each check prints what it
compared and its largest difference, and exits 1 when a property does not hold.

  predict_check.py csv A.csv B.csv TOL        every number of B equals A's to TOL (relative)
  predict_check.py mse PREDICTIONS.csv METRICS.csv TOL
                                              the MSE over predictions.csv's rows with targets
                                              equals the last validation mse of metrics.csv
  predict_check.py cubes WHOLE.csv PIECES.csv NAME TOL
                                              NAME's row in WHOLE equals the mean of PIECES' rows
  predict_check.py h5 A.h5 B.h5 TOL           /prediction identical, /probabilities to TOL
  predict_check.py nifti A.nii.gz B.nii.gz TOL
                                              the same voxels (labels: identical; else to TOL)
  predict_check.py input SAMPLE.h5 OUT.h5 LOG1P [PADDED_DHW]
                                              /input [1,C,D,H,W] float64: the sample's /volume or
                                              /full after log1p (LOG1P 1) or the NIfTI
                                              normalisation (a .nii.gz SAMPLE), zero-padded
  predict_check.py torch-regression REF.h5 PREDICTIONS.csv NAME TOL
  predict_check.py torch-segmentation REF.h5 PREDICTION DHW TOL
                                              hybrid3d's labels and probabilities against
                                              PyTorch's logits cropped to DHW
"""
import csv
import sys

import numpy as np


def fail(message):
    print("FAILED: " + message)
    sys.exit(1)


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def numbers(row):
    return {k: float(v) for k, v in row.items() if k != "file" and v != ""}


def close(a, b, tol):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def check_csv(a_path, b_path, tol):
    a, b = rows(a_path), rows(b_path)
    if [r["file"] for r in a] != [r["file"] for r in b]:
        fail(f"{b_path} lists other files than {a_path}")
    worst = 0.0
    for ra, rb in zip(a, b):
        na, nb = numbers(ra), numbers(rb)
        if na.keys() != nb.keys():
            fail(f"{b_path}: other columns than {a_path}")
        for k in na:
            worst = max(worst, abs(na[k] - nb[k]))
            if not close(na[k], nb[k], tol):
                fail(f"{ra['file']} {k}: {na[k]!r} in {a_path}, {nb[k]!r} in {b_path}")
    print(f"{len(a)} rows equal to {tol} (largest difference {worst:.3g})")


def check_mse(predictions, metrics, tol):
    errors = []
    for r in rows(predictions):
        n = numbers(r)
        targets = [k for k in n if k.startswith("target")]
        errors += [(n[k] - n["true_" + k]) ** 2 for k in targets]
    mse = float(np.mean(errors))
    validation = [r for r in rows(metrics) if r.get("mse", "") != ""]
    if not validation:
        fail(f"{metrics} has no validation mse")
    expected = float(validation[-1]["mse"])
    if not close(mse, expected, tol):
        fail(f"MSE from {predictions} {mse!r}, the run's last validation mse {expected!r}")
    print(f"MSE {mse!r} = the last validation mse {expected!r} to {tol}")


def check_cubes(whole, pieces, name, tol):
    row = [numbers(r) for r in rows(whole) if r["file"] == name]
    if len(row) != 1:
        fail(f"{whole} has no row {name}")
    parts = [numbers(r) for r in rows(pieces)]
    for k in [k for k in row[0] if not k.startswith("true_")]:
        mean = float(np.mean([p[k] for p in parts]))
        if not close(row[0][k], mean, tol):
            fail(f"{name} {k}: {row[0][k]!r}, the mean of its {len(parts)} cubes {mean!r}")
    print(f"{name} = the mean of its {len(parts)} cubes to {tol}")


def compare_arrays(what, a, b, tol, exact):
    if a.shape != b.shape:
        fail(f"{what}: shapes {a.shape} and {b.shape}")
    if exact:
        differ = int(np.sum(a != b))
        if differ:
            fail(f"{what}: {differ} of {a.size} voxels differ")
        print(f"{what}: {a.size} voxels identical")
        return
    worst = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
    if worst > tol:
        fail(f"{what}: largest difference {worst:.3g} > {tol}")
    print(f"{what}: largest difference {worst:.3g} <= {tol}")


def check_h5(a_path, b_path, tol):
    import h5py
    with h5py.File(a_path, "r") as a, h5py.File(b_path, "r") as b:
        compare_arrays(f"{b_path}:/prediction", a["prediction"][...], b["prediction"][...], 0, True)
        if "probabilities" in a:
            compare_arrays(f"{b_path}:/probabilities", a["probabilities"][...],
                           b["probabilities"][...], tol, False)


def nifti_voxels(path):
    import gzip
    import struct
    raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    sizeof = struct.unpack("<i", raw[:4])[0]
    if sizeof == 348:
        dim = struct.unpack("<8h", raw[40:56])
        datatype = struct.unpack("<h", raw[70:72])[0]
        offset = int(struct.unpack("<f", raw[108:112])[0])
    else:
        dim = struct.unpack("<8q", raw[16:80])
        datatype = struct.unpack("<h", raw[12:14])[0]
        offset = struct.unpack("<q", raw[168:176])[0]
    dtype = {2: np.uint8, 4: np.int16, 8: np.int32, 16: np.float32, 64: np.float64}[datatype]
    shape = tuple(reversed(dim[1:dim[0] + 1]))
    return np.frombuffer(raw[offset:], dtype=dtype, count=int(np.prod(shape))).reshape(shape)


def check_nifti(a_path, b_path, tol):
    a, b = nifti_voxels(a_path), nifti_voxels(b_path)
    compare_arrays(b_path, a, b, tol, a.dtype == np.uint8)


def write_input(sample, out, log1p, padded):
    import h5py
    if sample.endswith(".nii.gz") or sample.endswith(".nii"):
        x = nifti_voxels(sample).astype(np.float64)
        x = x.reshape((1,) + x.shape) if x.ndim == 3 else x
        for c in range(x.shape[0]):
            std = x[c].std()
            x[c] = (x[c] - x[c].mean()) / (std if std > 0 else 1.0)
    else:
        with h5py.File(sample, "r") as f:
            x = (f["full"] if "full" in f else f["volume"])[...].astype(np.float64)
        if log1p:
            x = np.log1p(x)
    if padded:
        p = np.zeros((x.shape[0],) + tuple(padded))
        p[:, :x.shape[1], :x.shape[2], :x.shape[3]] = x
        x = p
    with h5py.File(out, "w") as f:
        f["input"] = x[np.newaxis]
    print(f"{out}: /input {list(x[np.newaxis].shape)}")


def check_torch_regression(ref, predictions, name, tol):
    import h5py
    with h5py.File(ref, "r") as f:
        torch_out = f["output"][...][0]
    row = [numbers(r) for r in rows(predictions) if r["file"] == name][0]
    ours = np.array([row[f"target{t}"] for t in range(len(torch_out))])
    compare_arrays(f"{name} against PyTorch", torch_out, ours, tol, False)


def check_torch_segmentation(ref, prediction, dhw, tol):
    import h5py
    with h5py.File(ref, "r") as f:
        logits = f["output"][...][0]
    d, h, w = dhw
    logits = logits[:, :d, :h, :w]
    z = np.exp(logits - logits.max(axis=0))
    softmax = z / z.sum(axis=0)
    top = np.sort(logits, axis=0)
    ties = int(np.sum(top[-1] - top[-2] <= tol * np.maximum(1.0, np.abs(top[-1]))))
    if prediction.endswith(".h5"):
        with h5py.File(prediction, "r") as f:
            labels, probabilities = f["prediction"][...], f["probabilities"][...]
    else:
        labels = nifti_voxels(prediction)
        probabilities = nifti_voxels(prediction.replace(".nii.gz", "_probabilities.nii.gz"))
    differ = int(np.sum(labels != logits.argmax(axis=0)))
    if differ > ties:
        fail(f"{prediction}: {differ} labels differ from PyTorch's argmax ({ties} near-ties)")
    print(f"{prediction}: {labels.size} labels, {differ} differ from PyTorch's argmax "
          f"({ties} near-ties)")
    compare_arrays(f"{prediction} probabilities against PyTorch", softmax, probabilities, tol,
                   False)


def main(a):
    if a[0] == "csv":
        check_csv(a[1], a[2], float(a[3]))
    elif a[0] == "mse":
        check_mse(a[1], a[2], float(a[3]))
    elif a[0] == "cubes":
        check_cubes(a[1], a[2], a[3], float(a[4]))
    elif a[0] == "h5":
        check_h5(a[1], a[2], float(a[3]))
    elif a[0] == "nifti":
        check_nifti(a[1], a[2], float(a[3]))
    elif a[0] == "input":
        write_input(a[1], a[2], a[3] == "1", [int(v) for v in a[4].split("x")] if len(a) > 4 else None)
    elif a[0] == "torch-regression":
        check_torch_regression(a[1], a[2], a[3], float(a[4]))
    elif a[0] == "torch-segmentation":
        check_torch_segmentation(a[1], a[2], [int(v) for v in a[3].split("x")], float(a[4]))
    else:
        fail("unknown check " + a[0])


if __name__ == "__main__":
    main(sys.argv[1:])
