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
import torch.nn.functional as F


def window_out(e, k, s, p):
    return (e + 2 * p - k) // s + 1


class CosmoFlow(nn.Module):
    """LBANN 2020 CosmoFlow: conv1..conv7 (k3, p1, no bias; conv4 stride 2) each with
    LeakyReLU(0.01); average pools (3, 2, 1, padding counted) after conv1..conv5, after conv6
    when S >= 256 and after conv7 when S = 512, only where the input extent is >= 4; dropout
    (keep 0.8) before fc1, fc2, fc3; LeakyReLU(0.01) after fc1 and fc2."""

    def __init__(self, S):
        super().__init__()
        chans = [4, 16, 32, 64, 128, 256, 256, 256]
        self.convs = nn.ModuleList()
        self.pools = []
        e = S
        for i in range(1, 8):
            stride = 2 if i == 4 else 1
            self.convs.append(nn.Conv3d(chans[i - 1], chans[i], 3, stride=stride, padding=1, bias=False))
            e = window_out(e, 3, stride, 1)
            pool = i <= 5 or (i == 6 and S >= 256) or (i == 7 and S == 512)
            self.pools.append(pool and e >= 4)
            if self.pools[-1]:
                e = window_out(e, 3, 2, 1)
        flat = 256 * e ** 3
        self.fc1 = nn.Linear(flat, 2048)
        self.fc2 = nn.Linear(2048, 256)
        self.fc3 = nn.Linear(256, 4)
        self.drop = nn.Dropout(p=0.2)

    def forward(self, x):
        for conv, pool in zip(self.convs, self.pools):
            x = F.leaky_relu(conv(x), 0.01)
            if pool:
                x = F.avg_pool3d(x, 3, stride=2, padding=1, count_include_pad=True)
        x = torch.flatten(x, 1)
        x = F.leaky_relu(self.fc1(self.drop(x)), 0.01)
        x = F.leaky_relu(self.fc2(self.drop(x)), 0.01)
        return self.fc3(self.drop(x))


def block(cin, a, b):
    return nn.Sequential(
        nn.Conv3d(cin, a, 3, padding=1, bias=False), nn.BatchNorm3d(a), nn.ReLU(inplace=True),
        nn.Conv3d(a, b, 3, padding=1, bias=False), nn.BatchNorm3d(b), nn.ReLU(inplace=True))


class UNet3d(nn.Module):
    """LBANN 2020 3D U-Net: enc1 [32,64], enc2 [64,128], enc3 [128,256] each followed by max
    pool 2/2, bottom [256,512]; up3..up1 transposed convs (k2, s2, no bias, channels kept),
    concatenation [up, skip], dec3 [256,256], dec2 [128,128], dec1 [64,64]; head 1^3 conv
    with bias, 64 -> 3 classes."""

    def __init__(self):
        super().__init__()
        self.enc1 = block(1, 32, 64)
        self.enc2 = block(64, 64, 128)
        self.enc3 = block(128, 128, 256)
        self.bottom = block(256, 256, 512)
        self.up3 = nn.ConvTranspose3d(512, 512, 2, stride=2, bias=False)
        self.dec3 = block(512 + 256, 256, 256)
        self.up2 = nn.ConvTranspose3d(256, 256, 2, stride=2, bias=False)
        self.dec2 = block(256 + 128, 128, 128)
        self.up1 = nn.ConvTranspose3d(128, 128, 2, stride=2, bias=False)
        self.dec1 = block(128 + 64, 64, 64)
        self.head = nn.Conv3d(64, 3, 1, bias=True)

    def forward(self, x):
        s1 = self.enc1(x)
        s2 = self.enc2(F.max_pool3d(s1, 2, 2))
        s3 = self.enc3(F.max_pool3d(s2, 2, 2))
        b = self.bottom(F.max_pool3d(s3, 2, 2))
        d3 = self.dec3(torch.cat([self.up3(b), s3], 1))
        d2 = self.dec2(torch.cat([self.up2(d3), s2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), s1], 1))
        return self.head(d1)


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
