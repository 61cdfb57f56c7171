#!/usr/bin/python3
"""The training step of bench_train_step in PyTorch, for comparison only (never in the training
path): the models of docs/design.md section 6 exactly, batch 1, float32, synthetic inputs, forward,
loss, backward and a plain SGD step, timed over warm-up + N steps; prints the median, minimum
and maximum milliseconds per step per configuration, and one RESULT line each for
perf_tests/step_vs_pytorch.sh.

Usage: /usr/bin/python3 pytorch_step.py [--model cosmoflow|unet3d] [--size S] [--steps N]
           [--warmup W] [--threads T] [--with-unet64]
Without --model: CosmoFlow at 32, 64, 128 and the U-Net at 32 (and 64 with --with-unet64).
The environment (LD_PRELOAD of tcmalloc, OMP_WAIT_POLICY, OPENBLAS_CORETYPE) is the caller's
to set; it is printed first.
"""
import argparse
import os
import sys
import time

import torch
import torch.nn as nn

# The models, shared with the inference reference and the predict benchmark.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "unit_tests",
                                "reference"))
from torch_models import CosmoFlow, UNet3d  # noqa: E402


def run(arch, S, warmup, steps, bf16):
    torch.manual_seed(7)
    if arch == "cosmoflow":
        model = CosmoFlow(S)
        x = torch.rand(1, 4, S, S, S)
        target = torch.rand(1, 4) * 2 - 1
        loss_fn = nn.MSELoss()
    else:
        model = UNet3d()
        x = torch.rand(1, 1, S, S, S)
        target = torch.randint(0, 3, (1, S, S, S))
        loss_fn = nn.CrossEntropyLoss()
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    times = []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        # --bf16: PyTorch's CPU mixed precision (autocast: convolutions and matmuls in bfloat16,
        # float master weights, the loss in float), the peer of hybrid3d's Model/precision bfloat16.
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(model(x), target)
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if i >= warmup:
            times.append(1e3 * dt)
    if not torch.isfinite(loss):
        sys.exit(f"pytorch_step: {arch} S={S}: the loss is {loss.item()}")
    med = sorted(times)[len(times) // 2]  # as bench_train_step
    print(f"{arch + ' S=' + str(S):16s} median {med:.1f} ms  min {min(times):.1f}  max {max(times):.1f} "
          f"per step ({steps} steps after {warmup} warm-up)", flush=True)
    precision = "bfloat16" if bf16 else "float"
    print(f"RESULT model={arch} size={S} precision={precision} median_ms={med:.3f} min_ms={min(times):.3f} "
          f"max_ms={max(times):.3f}", flush=True)


def cpu_capability():
    """The instruction set PyTorch's own CPU kernels dispatch to (AVX2, AVX512), where it says."""
    try:
        return torch.backends.cpu.get_cpu_capability()
    except AttributeError:
        return torch._C._get_cpu_capability() if hasattr(torch._C, "_get_cpu_capability") else "unknown"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=["cosmoflow", "unet3d"])
    p.add_argument("--size", type=int)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--with-unet64", action="store_true")
    p.add_argument("--bf16", action="store_true", help="bfloat16 autocast (mixed precision)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    configs = []
    if a.model in (None, "cosmoflow"):
        configs += [("cosmoflow", s) for s in ([a.size] if a.size else [32, 64, 128])]
    if a.model in (None, "unet3d"):
        configs += [("unet3d", s) for s in ([a.size] if a.size else ([32, 64] if a.with_unet64 else [32]))]
    env = {k: os.environ.get(k, "(unset)") for k in ("OPENBLAS_CORETYPE", "OMP_WAIT_POLICY", "LD_PRELOAD")}
    print(f"pytorch_step: torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"mkldnn {torch.backends.mkldnn.is_available()}, "
          f"cpu capability {cpu_capability()}, "
          f"autocast bf16 {a.bf16}, "
          + ", ".join(f"{k}={v}" for k, v in env.items()), flush=True)
    for arch, S in configs:
        run(arch, S, a.warmup, a.steps, a.bf16)


if __name__ == "__main__":
    main()
