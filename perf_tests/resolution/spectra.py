#!/usr/bin/env python3
"""Which cosmology parameter lives at which scales: the power spectrum of the network's input
(log(1 + counts), per channel) when one parameter goes from the low to the high end of its range
and the others stay at their centres. The same seed gives the same white noise whatever the
parameters (the generator keys it on seed and sample only), so the ratio of the two spectra
shows the parameter's effect without the samples' own scatter. Vertical lines: the Nyquist
wavenumbers left after downsampling by 2 and by 4.

  spectra.py [--bin build/bin] [--size 128] [--samples 4] [--out DIR]

Writes DIR/spectra.csv (k, channel, parameter, power at the low and high end) and, with
matplotlib, DIR/spectra.png; prints per parameter the share of its effect (the squared log ratio
summed over modes) that lies below 1/2 and 1/4 of the Nyquist wavenumber.
"""
import argparse
import csv
import glob
import os
import subprocess

import h5py
import numpy as np

RANGES = [("amplitude", 0.6, 1.2), ("slope", -2.6, -1.4), ("cutoff", 0.4, 0.9),
          ("growth", 0.5, 1.5)]  # CosmologyParameters.hpp: cosmologyParameterRanges()


def generate(binary, out, size, samples, params):
    if not os.path.exists(os.path.join(out, "manifest.txt")):
        subprocess.run([binary, "generate", "cosmology", "--out", out, "--size", str(size),
                        "--train", str(samples), "--seed", "7", "--mean-count", "64",
                        "--params", ",".join(str(p) for p in params)],
                       check=True, stdout=subprocess.DEVNULL)


def spectrum(directory, size):
    """Shell-averaged power of log1p(counts) per channel, shells of one fundamental mode."""
    k = np.fft.fftfreq(size) * size
    kk = np.sqrt(k[:, None, None] ** 2 + k[None, :, None] ** 2 + k[None, None, :] ** 2)
    shell = np.rint(kk).astype(int)
    shells = size // 2 + 1
    power, n = 0, 0
    for path in sorted(glob.glob(os.path.join(directory, "train", "*.h5"))):
        with h5py.File(path, "r") as f:
            x = np.log1p(f["full"][...].astype(np.float64))
        for c in range(x.shape[0]):
            p = np.abs(np.fft.fftn(x[c] - x[c].mean())) ** 2
            row = np.bincount(shell.ravel(), weights=p.ravel(), minlength=shells)[:shells]
            power = power + np.eye(x.shape[0])[c][:, None] * row[None, :]
        n += 1
    modes = np.bincount(shell.ravel(), minlength=shells)[:shells]
    return power / n / np.maximum(modes, 1), np.arange(shells) / (size / 2), modes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--bin", default=os.path.join(here, "..", "..", "build", "bin"))
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--out", default="spectra")
    a = ap.parse_args()
    binary = os.path.join(a.bin, "hybrid3d")
    centre = [(lo + hi) / 2 for _, lo, hi in RANGES]
    rows, share = [], {}
    for i, (name, lo, hi) in enumerate(RANGES):
        ends = []
        for end, value in (("low", lo), ("high", hi)):
            params = list(centre)
            params[i] = value
            d = os.path.join(a.out, f"{name}_{end}")
            generate(binary, d, a.size, a.samples, params)
            ends.append(spectrum(d, a.size))
        (plo, k, modes), (phi, _, _) = ends
        for c in range(plo.shape[0]):
            for s in range(1, len(k)):
                rows.append([k[s], c, name, plo[c, s], phi[c, s]])
        effect = (np.log(phi[:, 1:] / plo[:, 1:]) ** 2 * modes[1:]).sum(axis=0)
        share[name] = [effect[k[1:] <= cut].sum() / effect.sum() for cut in (0.5, 0.25)]
        print(f"{name:10s} share of its effect on the spectra below 1/2 Nyquist "
              f"{100 * share[name][0]:5.1f} %, below 1/4 Nyquist {100 * share[name][1]:5.1f} %")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "spectra.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["k_over_nyquist", "channel", "parameter", "power_low", "power_high"])
        w.writerows(rows)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: no matplotlib: no plot")
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, c in zip(axes, (0, 3)):
        for name, _, _ in RANGES:
            r = [x for x in rows if x[1] == c and x[2] == name]
            ax.plot([x[0] for x in r], [x[4] / x[3] for x in r], label=name)
        for cut, text in ((0.5, "/2"), (0.25, "/4")):
            ax.axvline(cut, color="gray", ls=":")
            ax.text(cut, 0.02, f" Nyquist {text}", color="gray", fontsize=8,
                    transform=ax.get_xaxis_transform())
        ax.axhline(1, color="black", lw=0.5)
        ax.set_yscale("log")
        ax.set_xlabel("k / Nyquist of the full resolution")
        ax.set_title(f"channel {c}: P(high end) / P(low end)")
    axes[0].set_ylabel("power ratio of log(1 + counts)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "spectra.png"), dpi=120)
    print(f"wrote {os.path.join(a.out, 'spectra.png')}")


if __name__ == "__main__":
    main()
