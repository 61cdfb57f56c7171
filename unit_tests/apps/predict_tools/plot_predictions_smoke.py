#!/usr/bin/python3
"""perf_tests/plot_predictions.py on tiny predict output directories made here in the formats
of issue 37: regression with and without truth columns, segmentation from HDF5 samples (truth
inside) and from NIfTI-1 images with a labels folder. Passes when every expected PNG is written
and is a PNG, and when a prediction whose shape differs from its image is refused with one line
naming the file and a non-zero status.

  python3 plot_predictions_smoke.py SOURCE_DIR WORK_DIR
"""
import csv
import gzip
import os
import shutil
import struct
import subprocess
import sys

import h5py
import numpy as np

SHAPE = (8, 12, 10)  # D, H, W: uneven, so a transposed axis shows


def write_nifti1(path, data):
    """A gzipped NIfTI-1 file of `data` ([k, j, i] or [t, k, j, i], row-major)."""
    codes = {np.dtype("u1"): 2, np.dtype("i2"): 4, np.dtype("f4"): 16}
    dims = data.shape[::-1]
    header = bytearray(348)
    struct.pack_into("<i", header, 0, 348)
    struct.pack_into("<8h", header, 40, len(dims), *dims, *([1] * (7 - len(dims))))
    struct.pack_into("<2h", header, 70, codes[data.dtype], 8 * data.dtype.itemsize)
    struct.pack_into("<8f", header, 76, *([1.0] * 8))
    struct.pack_into("<f", header, 108, 352.0)  # vox_offset: header + 4 extension bytes
    header[344:348] = b"n+1\0"
    with gzip.open(path, "wb") as f:
        f.write(bytes(header) + bytes(4) + data.astype(data.dtype.newbyteorder("<")).tobytes())


def labels():
    z, y, x = np.mgrid[:SHAPE[0], :SHAPE[1], :SHAPE[2]]
    organ = (z - 4) ** 2 + (y - 6) ** 2 + (x - 5) ** 2 < 12
    lesion = (z - 4) ** 2 + (y - 6) ** 2 + (x - 5) ** 2 < 3
    return (organ.astype("u1") + lesion.astype("u1"))


def make(work):
    rng = np.random.default_rng(1)
    os.makedirs(f"{work}/regression")
    names = ["amplitude", "slope"]
    with open(f"{work}/regression/predictions.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["file"] + names + ["true_" + n for n in names])
        for i in range(6):
            t = rng.uniform(-1, 1, 2)
            w.writerow([f"cosmo_{i}.h5", *(t + 0.1), *t])
    os.makedirs(f"{work}/no_truth")
    with open(f"{work}/no_truth/predictions.csv", "w", newline="") as f:
        f.write("file,target0\na.h5,0.5\nb.h5,-0.25\n")

    truth = labels()
    for d in ("samples", "seg_h5", "images", "labels", "seg_nii", "bad"):
        os.makedirs(f"{work}/{d}")
    with h5py.File(f"{work}/samples/seg_000000.h5", "w") as f:
        f["volume"] = (truth + rng.normal(0, 0.3, SHAPE))[None].astype("f4")
        f["segmentation"] = truth
    with h5py.File(f"{work}/seg_h5/seg_000000.h5", "w") as f:
        f["prediction"] = np.roll(truth, 1, axis=2)
        f["probabilities"] = rng.random((3,) + SHAPE).astype("f4")
    with open(f"{work}/seg_h5/metrics.csv", "w") as f:
        f.write("file,dice_0,dice_1,dice_2,mean_foreground_dice,voxels_0,voxels_1,voxels_2\n"
                f"{work}/samples/seg_000000.h5,0.9,0.8,0.6,0.7,900,50,10\n")
    write_nifti1(f"{work}/images/case_1.nii.gz", (truth * 100).astype("i2"))
    write_nifti1(f"{work}/labels/case_1.nii.gz", truth)
    write_nifti1(f"{work}/seg_nii/case_1.nii.gz", np.roll(truth, 1, axis=0))
    write_nifti1(f"{work}/seg_nii/case_1_probabilities.nii.gz", rng.random((3,) + SHAPE).astype("f4"))
    with h5py.File(f"{work}/bad/seg_000000.h5", "w") as f:
        f["prediction"] = truth[:, :, :-1]  # one W plane short of its image


def plot(source, *args):
    return subprocess.run([sys.executable, f"{source}/perf_tests/plot_predictions.py", *args],
                          capture_output=True, text=True)


def main():
    source, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    make(work)
    cases = [([f"{work}/regression"], f"{work}/regression/predictions.png"),
             ([f"{work}/no_truth"], f"{work}/no_truth/predictions.png"),
             ([f"{work}/seg_h5", "--images", f"{work}/samples"], f"{work}/seg_h5/seg_000000.png"),
             ([f"{work}/seg_nii", "--images", f"{work}/images", "--labels", f"{work}/labels"],
              f"{work}/seg_nii/case_1.png"),
             ([f"{work}/seg_nii", "--out-dir", f"{work}/pictures"], f"{work}/pictures/case_1.png")]
    failures = []
    for args, png in cases:
        r = plot(source, *args)
        if r.returncode != 0:
            failures.append(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
        elif not os.path.isfile(png) or open(png, "rb").read(8) != b"\x89PNG\r\n\x1a\n":
            failures.append(f"{' '.join(args)}: no PNG {png}")
    if os.path.exists(f"{work}/seg_nii/case_1_probabilities.png"):
        failures.append("the probabilities file was drawn as a prediction")
    r = plot(source, f"{work}/bad", "--images", f"{work}/samples")
    lines = r.stderr.strip().splitlines()
    if r.returncode == 0 or len(lines) != 1 or f"{work}/bad/seg_000000.h5" not in lines[0]:
        failures.append(f"a prediction of the wrong shape: exit {r.returncode}, stderr {r.stderr!r}")
    for f in failures:
        print("FAILED:", f)
    print(f"plot_predictions smoke: {len(cases) + 1 - len(failures)} of {len(cases) + 1} cases as expected")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
