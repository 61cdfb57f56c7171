#!/usr/bin/python3
"""Writes the optimiser and learning-rate reference files of unit_tests/reference with PyTorch
(torch.optim, float64): test tooling only, never in the training path.

Each optimiser case runs torch.optim.SGD / Adam / AdamW for a few steps on two parameters, with
given gradients and a given learning rate per step, and records every parameter and every state
buffer after every step. unit_tests/optim replays the same gradients and rates through hybrid3d's
optimisers. Parameter `small` gets gradients of about 1e-7, where Adam's eps (1e-8) is not
negligible, so where eps enters the update shows.

Each schedule case records the learning rate PyTorch's schedulers give at every step of a run
(stepped once per mini-batch) that hybrid3d's LearningRateSchedule is meant to equal.

Usage: /usr/bin/python3 unit_tests/reference/optimizers/make_optimizer_references.py [OUTPUT_DIR]
(default: the folder of this script). Needs python3-torch and python3-h5py.
"""
import os
import sys
import warnings

import h5py
import numpy as np
import torch

STEPS = 5
# Varying rates, so a rate applied to the wrong step shows.
RATES = [0.1, 0.08, 0.05, 0.05, 0.02]
SHAPES = {"weight": (3, 4), "small": (5,)}


def gradients(seed):
    """Per parameter: a [STEPS, shape] tensor of gradients."""
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for name, shape in SHAPES.items():
        g = torch.randn((STEPS,) + shape, generator=gen, dtype=torch.float64)
        out[name] = g * (1e-7 if name == "small" else 1.0)
    return out


def initial(seed):
    gen = torch.Generator().manual_seed(seed)
    return {n: torch.rand(s, generator=gen, dtype=torch.float64) * 2 - 1
            for n, s in SHAPES.items()}


def write_optimizer_case(path, op, settings, make, state_names, seed):
    """Runs `make(params)` for STEPS steps; writes initial values, gradients, rates and, after
    every step, the values and the state buffers named in `state_names`."""
    start = initial(seed)
    grads = gradients(seed + 1)
    params = {n: torch.nn.Parameter(v.clone()) for n, v in start.items()}
    opt = make(list(params.values()))
    values = {n: [] for n in params}
    states = {(n, s): [] for n in params for s in state_names}
    for step in range(STEPS):
        for group in opt.param_groups:
            group["lr"] = RATES[step]
        for n, p in params.items():
            p.grad = grads[n][step].clone()
        opt.step()
        for n, p in params.items():
            values[n].append(p.detach().clone())
            for s in state_names:
                states[(n, s)].append(opt.state[p][s].detach().clone())
    with h5py.File(path, "w") as f:
        f.attrs["op"] = op
        f.attrs["steps"] = STEPS
        for k, v in settings.items():
            f.attrs[k] = float(v)
        f["lr"] = np.array(RATES, dtype=np.float64)
        for n in params:
            f[n + "/initial"] = start[n].numpy()
            f[n + "/grad"] = grads[n].numpy()
            f[n + "/value"] = torch.stack(values[n]).numpy()
            for s in state_names:
                f[n + "/" + s] = torch.stack(states[(n, s)]).numpy()


def sgd_case(path, momentum, dampening, weight_decay, nesterov, seed):
    settings = dict(momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                    nesterov=int(nesterov))
    write_optimizer_case(
        path, "sgd", settings,
        lambda p: torch.optim.SGD(p, lr=RATES[0], momentum=momentum, dampening=dampening,
                                  weight_decay=weight_decay, nesterov=nesterov, foreach=False),
        ["momentum_buffer"] if momentum > 0 else [], seed)


def adam_case(path, op, weight_decay, seed):
    kind = torch.optim.AdamW if op == "adamw" else torch.optim.Adam
    settings = dict(beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=weight_decay)
    write_optimizer_case(
        path, op, settings,
        lambda p: kind(p, lr=RATES[0], betas=(0.9, 0.999), eps=1e-8, weight_decay=weight_decay,
                       amsgrad=False, foreach=False),
        ["exp_avg", "exp_avg_sq"], seed)


def schedule_case(path, kind, base, steps, steps_per_epoch, make, settings):
    """Records the rate of each of `steps` steps; `make(optimizer)` builds the scheduler."""
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))], lr=base)
    sched = make(opt)
    rates = []
    for _ in range(steps):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    with h5py.File(path, "w") as f:
        f.attrs["op"] = "lr_schedule"
        f.attrs["kind"] = kind
        f.attrs["base_rate"] = float(base)
        f.attrs["steps_per_epoch"] = steps_per_epoch
        for k, v in settings.items():
            f.attrs[k] = np.array(v, dtype=np.float64) if isinstance(v, list) else float(v)
        f["lr"] = np.array(rates, dtype=np.float64)


def warmup(opt, warmup_steps):
    # hybrid3d's ramp base * (step + 1) / W is LinearLR from 1/W to 1 over W - 1 steps.
    return torch.optim.lr_scheduler.LinearLR(opt, start_factor=1.0 / warmup_steps,
                                             end_factor=1.0, total_iters=warmup_steps - 1)


def main():
    # SequentialLR steps its schedulers with an explicit epoch at a milestone itself (PyTorch
    # 1.13), which warns about a deprecated use that is PyTorch's own.
    warnings.filterwarnings("ignore", message="The epoch parameter", category=UserWarning)
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out, exist_ok=True)
    torch.set_default_dtype(torch.float64)
    sgd_case(os.path.join(out, "sgd_momentum_dampening.h5"), 0.9, 0.1, 1e-2, False, 11)
    sgd_case(os.path.join(out, "sgd_nesterov.h5"), 0.9, 0.0, 1e-2, True, 21)
    sgd_case(os.path.join(out, "sgd_plain.h5"), 0.0, 0.0, 5e-2, False, 31)
    adam_case(os.path.join(out, "adam.h5"), "adam", 5e-2, 41)
    adam_case(os.path.join(out, "adamw.h5"), "adamw", 5e-2, 51)

    spe = 4  # steps per epoch
    schedule_case(os.path.join(out, "lr_warmup_constant.h5"), "constant", 0.4, 20, spe,
                  lambda o: warmup(o, 2 * spe), dict(warmup_epochs=2))
    schedule_case(os.path.join(out, "lr_step_decay.h5"), "step", 1.0, 24, spe,
                  lambda o: torch.optim.lr_scheduler.MultiStepLR(
                      o, milestones=[2 * spe, 5 * spe], gamma=0.5),
                  dict(decay_epochs=[2.0, 5.0], decay_factor=0.5))
    warm, total = 1, 6
    schedule_case(os.path.join(out, "lr_warmup_cosine.h5"), "cosine", 0.1, total * spe, spe,
                  lambda o: torch.optim.lr_scheduler.SequentialLR(
                      o, [warmup(o, warm * spe),
                          torch.optim.lr_scheduler.CosineAnnealingLR(
                              o, T_max=(total - warm) * spe, eta_min=1e-3)],
                      milestones=[warm * spe]),
                  dict(warmup_epochs=warm, total_epochs=total, min_rate=1e-3))


if __name__ == "__main__":
    main()
