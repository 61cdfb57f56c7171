#!/usr/bin/python3
"""unit_tests/reference/predict/make_predict_reference.py against hybrid3d itself, on a
checkpoint of a short `hybrid3d train` run whose deck preprocesses nothing (so a sample's
/full or /volume is the model's input as it is):

  check_reference.py SOURCE_DIR CHECKPOINT WORK gradients GRADIENTS.h5 eval|train SAMPLE.h5...
      /output of `hybrid3d gradients` (double precision, dropout off) on these samples against
      the reference in that mode (eval for a model without batch norm, where the two agree);
  check_reference.py SOURCE_DIR CHECKPOINT WORK validation METRICS.csv SAMPLE.h5...
      the validation loss of the run's last validation row (eval mode: batch norm with the
      running statistics, computed with the checkpoint's weights) against the softmax
      cross-entropy of the reference's logits over the validation samples' voxels.

Prints the largest difference and exits 1 when it exceeds the tolerance.
"""
import csv
import os
import subprocess
import sys

import h5py
import numpy as np

# Both sides in double, summing in different orders (im2col + gemm against PyTorch's kernels):
# differences of a few hundred ulps of the largest output; a weight in the wrong place moves
# the outputs by 1e-3 and more.
DOUBLE_TOLERANCE = 1e-10
# metrics.csv holds the loss of a float forward (the run's precision) to 8 significant digits:
# the mean over the voxels averages each voxel's float rounding (measured 8e-9 relative on this
# test's case); 1e-6 leaves two orders of magnitude and still catches a layer's output scaled
# by 1 + 1e-4 (measured 2.5e-5).
FLOAT_TOLERANCE = 1e-6


def stack(samples, path):
    """The samples' model inputs ([C,D,H,W] /full or /volume) as /input [N,C,D,H,W]."""
    arrays = []
    for s in samples:
        with h5py.File(s, "r") as f:
            arrays.append(np.asarray(f["full" if "full" in f else "volume"], np.float64))
    with h5py.File(path, "w") as f:
        f["input"] = np.stack(arrays)


def reference(source, checkpoint, work, samples, mode):
    stack(samples, os.path.join(work, "input.h5"))
    out = os.path.join(work, f"reference_{mode}.h5")
    subprocess.run([sys.executable, os.path.join(source, "unit_tests/reference/predict/make_predict_reference.py"),
                    checkpoint, os.path.join(work, "input.h5"), out, "--mode", mode], check=True)
    with h5py.File(out, "r") as f:
        return np.asarray(f["output"])


def cross_entropy(logits, samples):
    labels = np.stack([np.asarray(h5py.File(s, "r")["segmentation"], np.int64) for s in samples])
    top = logits.max(axis=1, keepdims=True)
    log_sum = np.log(np.exp(logits - top).sum(axis=1)) + top[:, 0]
    return float(np.mean(log_sum - np.take_along_axis(logits, labels[:, None], axis=1)[:, 0]))


def main():
    source, checkpoint, work, kind, against = sys.argv[1:6]
    if kind == "gradients":
        mode, samples = sys.argv[6], sys.argv[7:]
        ours = reference(source, checkpoint, work, samples, mode)
        with h5py.File(against, "r") as f:
            theirs = np.asarray(f["output"])
        if ours.shape != theirs.shape:
            sys.exit(f"check_reference: /output shapes differ: {ours.shape} against {theirs.shape}")
        error = float(np.abs(ours - theirs).max() / np.abs(theirs).max())
        tolerance = DOUBLE_TOLERANCE
        print(f"check_reference: /output ({mode} mode), {ours.size} values: largest difference "
              f"{error:.3g} of the largest value (tolerance {tolerance})")
    else:
        samples = sys.argv[6:]
        with open(against) as f:
            rows = [r for r in csv.DictReader(f) if r["kind"] == "validation"]
        theirs = float(rows[-1]["loss"])
        ours = cross_entropy(reference(source, checkpoint, work, samples, "eval"), samples)
        error = abs(ours - theirs) / abs(theirs)
        tolerance = FLOAT_TOLERANCE
        print(f"check_reference: validation loss {theirs} (hybrid3d) against {ours:.9g} (reference, eval "
              f"mode): relative difference {error:.3g} (tolerance {tolerance})")
    sys.exit(0 if error <= tolerance else 1)


if __name__ == "__main__":
    main()
