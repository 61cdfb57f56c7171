#!/usr/bin/env python3
"""Per-channel offset and scale of log(1 + x) over a dataset's training samples, as the deck's
Data/channel offset and Data/channel scale take them (offset = mean, scale = 1 / standard
deviation), so every resolution of the study feeds the network inputs of unit variance.

  channel_stats.py DATASET_DIR [--samples N]     prints: OFFSETS SCALES (comma-separated)
"""
import argparse
import glob
import os
import sys

import h5py
import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("dataset")
    ap.add_argument("--samples", type=int, default=64, help="training samples read (default 64)")
    a = ap.parse_args()
    files = sorted(glob.glob(os.path.join(a.dataset, "train", "*.h5")))[: a.samples]
    if not files:
        sys.exit(f"{a.dataset}/train: no sample files")
    n, s1, s2 = 0, 0.0, 0.0
    for path in files:
        with h5py.File(path, "r") as f:
            x = np.log1p(f["full"][...].astype(np.float64))  # [C, S, S, S]
        x = x.reshape(x.shape[0], -1)
        n += x.shape[1]
        s1 = s1 + x.sum(axis=1)
        s2 = s2 + (x * x).sum(axis=1)
    mean = s1 / n
    std = np.sqrt(np.maximum(s2 / n - mean * mean, 1e-30))
    print(",".join(f"{v:.6g}" for v in mean), ",".join(f"{1 / v:.6g}" for v in std))


if __name__ == "__main__":
    main()
