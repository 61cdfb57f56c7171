#!/usr/bin/python3
"""The inference of `hybrid3d predict` in PyTorch, for comparison only: the repository's exact
U-Net (unit_tests/reference/torch_models.py, docs/design.md section 6), eval mode, one S^3
volume, batch 1, float32 (or bfloat16 autocast with --bf16), each forward inside
torch.inference_mode(). Times REPEATS forwards after WARMUP and prints the mean and median
milliseconds, then the process's resident memory before the first forward (libraries and
weights) and its peak (getrusage), as one RESULT line for perf_tests/predict_vs_pytorch.sh.

Usage: /usr/bin/python3 pytorch_predict.py [--size S] [--threads T] [--repeats N] [--warmup W]
           [--bf16]
The environment (LD_PRELOAD of tcmalloc, OMP_WAIT_POLICY, OPENBLAS_CORETYPE) is the caller's to
set; it is printed first.
"""
import argparse
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "unit_tests",
                                "reference"))
from torch_models import UNet3d  # noqa: E402


def rss_mib():
    """The resident set now (VmRSS of /proc/self/status), MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--bf16", action="store_true", help="bfloat16 autocast (mixed precision)")
    a = p.parse_args()
    if a.size < 8 or a.size % 8:
        sys.exit(f"pytorch_predict: --size {a.size}: the U-Net needs a multiple of 8")
    torch.set_num_threads(a.threads)
    env = {k: os.environ.get(k, "(unset)") for k in ("OPENBLAS_CORETYPE", "OMP_WAIT_POLICY", "LD_PRELOAD")}
    print(f"pytorch_predict: torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"mkldnn {torch.backends.mkldnn.is_available()}, autocast bf16 {a.bf16}, "
          + ", ".join(f"{k}={v}" for k, v in env.items()), flush=True)

    torch.manual_seed(7)
    model = UNet3d().eval()
    x = torch.rand(1, 1, a.size, a.size, a.size)
    base = rss_mib()
    times = []
    for i in range(a.warmup + a.repeats):
        t0 = time.perf_counter()
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            y = model(x)
        dt = 1e3 * (time.perf_counter() - t0)
        if i >= a.warmup:
            times.append(dt)
    if not torch.isfinite(y).all():
        sys.exit(f"pytorch_predict: S={a.size}: the output holds a non-finite value")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    med = sorted(times)[len(times) // 2]
    mean = sum(times) / len(times)
    precision = "bfloat16" if a.bf16 else "float"
    print(f"unet3d S={a.size} {precision}: mean {mean:.1f} ms, median {med:.1f} ms per forward "
          f"({a.repeats} after {a.warmup} warm-up); resident {base:.0f} MiB before, peak {peak:.0f} MiB",
          flush=True)
    print(f"RESULT model=unet3d size={a.size} precision={precision} mean_ms={mean:.3f} median_ms={med:.3f} "
          f"base_rss_mib={base:.1f} peak_rss_mib={peak:.1f}", flush=True)


if __name__ == "__main__":
    main()
