#!/usr/bin/env python3
"""Generate the optimizer and clipping reference fixture with PyTorch.

Usage (from the repository root, with the interpreter that has PyTorch):
    /usr/bin/python3 tools/reference/optim_reference.py [--out FILE]

Writes tests/fixtures/optim/optim_reference.json (by default). The problem is
fixed (no random numbers): three parameters with the loss
    sum(0.5 * coef * (p - target)^2 + 0.025 * p^4),
so grad = coef * (p - target) + 0.1 * p^3, which the C++ test recomputes by
hand. Parameter "bias" has decay = false (its param group has weight_decay 0)
and "table" has no gradient at step 0 (torch skips it; its own step count
starts one step later). Each case runs 5 steps of torch.optim.SGD / Adam /
AdamW with a per-step learning rate and records the parameters after every
step and the optimizer state at the end, in float64 and float32. A clipping
case records torch.nn.utils.clip_grad_norm_ on the step-0 gradients.
"""

import argparse
import json
import os

import torch

STEPS = 5
NO_GRAD = {"table": [0]}  # parameter name -> steps where it has no gradient


def problem():
    """name, shape, decay, init, coef, target: all exact decimal patterns."""
    specs = [("weight", [3, 4], True), ("bias", [4], False), ("table", [2, 3], True)]
    out = []
    for k, (name, shape, decay) in enumerate(specs):
        n = 1
        for s in shape:
            n *= s
        init = [round(((i * 7 + 3 * k) % 11 - 5) * 0.13, 6) for i in range(n)]
        coef = [round(0.5 + ((i * 5 + k) % 7) * 0.25, 6) for i in range(n)]
        target = [round(((i * 3 + k) % 5 - 2) * 0.4, 6) for i in range(n)]
        out.append({"name": name, "shape": shape, "decay": decay, "init": init, "coef": coef,
                    "target": target})
    return out


def make_params(spec, dtype):
    return [torch.tensor(p["init"], dtype=dtype).reshape(p["shape"]).requires_grad_(True)
            for p in spec]


def set_grads(spec, params, step):
    for p, t in zip(spec, params):
        t.grad = None
    loss = 0
    for p, t in zip(spec, params):
        if step in NO_GRAD.get(p["name"], []):
            continue
        coef = torch.tensor(p["coef"], dtype=t.dtype).reshape(p["shape"])
        target = torch.tensor(p["target"], dtype=t.dtype).reshape(p["shape"])
        loss = loss + (0.5 * coef * (t - target) ** 2 + 0.025 * t ** 4).sum()
    loss.backward()


def make_optimizer(kind, options, spec, params):
    wd = options["weight_decay"]
    groups = [{"params": [t], "weight_decay": wd if p["decay"] else 0.0}
              for p, t in zip(spec, params)]
    if kind == "sgd":
        return torch.optim.SGD(groups, lr=1.0, momentum=options["momentum"],
                               nesterov=options["nesterov"], weight_decay=wd)
    betas = (options["beta1"], options["beta2"])
    cls = torch.optim.Adam if kind == "adam" else torch.optim.AdamW
    return cls(groups, lr=1.0, betas=betas, eps=options["eps"], weight_decay=wd)


def flat(t):
    return [float(x) for x in t.detach().reshape(-1).tolist()]


def run_case(kind, options, lrs, spec, dtype):
    params = make_params(spec, dtype)
    opt = make_optimizer(kind, options, spec, params)
    trajectory = []
    for step, lr in enumerate(lrs):
        set_grads(spec, params, step)
        for group in opt.param_groups:
            group["lr"] = lr
        opt.step()
        trajectory.append({p["name"]: flat(t) for p, t in zip(spec, params)})
    state = {}
    for p, t in zip(spec, params):
        for key, value in opt.state[t].items():
            if value is not None:  # SGD without momentum keeps momentum_buffer = None
                state[p["name"] + "/" + key] = flat(value) if value.dim() > 0 else [float(value)]
    return {"trajectory": trajectory, "final_state": state}


CASES = [
    ("sgd_nesterov", "sgd", {"momentum": 0.9, "nesterov": True, "weight_decay": 0.01},
     [0.1, 0.08, 0.05, 0.12, 0.03]),
    ("sgd_momentum", "sgd", {"momentum": 0.5, "nesterov": False, "weight_decay": 0.0},
     [0.05, 0.1, 0.02, 0.07, 0.04]),
    ("sgd_plain", "sgd", {"momentum": 0.0, "nesterov": False, "weight_decay": 0.1},
     [0.1, 0.1, 0.05, 0.05, 0.02]),
    ("adam", "adam", {"beta1": 0.9, "beta2": 0.99, "eps": 1e-8, "weight_decay": 0.05},
     [0.01, 0.02, 0.015, 0.03, 0.005]),
    ("adamw", "adamw", {"beta1": 0.85, "beta2": 0.995, "eps": 1e-6, "weight_decay": 0.1},
     [0.02, 0.01, 0.03, 0.025, 0.01]),
]


def clip_case(spec):
    params = make_params(spec, torch.float64)
    set_grads(spec, params, 1)
    grads_before = {p["name"]: flat(t.grad) for p, t in zip(spec, params)}
    max_norm = 1.5
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    return {"max_norm": max_norm, "norm": float(norm), "grads_before": grads_before,
            "grads_after": {p["name"]: flat(t.grad) for p, t in zip(spec, params)}}


def main():
    parser = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.join(here, "..", "..", "tests", "fixtures", "optim", "optim_reference.json")
    parser.add_argument("--out", default=os.path.normpath(default))
    args = parser.parse_args()
    torch.set_num_threads(1)

    spec = problem()
    cases = {}
    for name, kind, options, lrs in CASES:
        for dtype_name, dtype in (("f64", torch.float64), ("f32", torch.float32)):
            result = run_case(kind, options, lrs, spec, dtype)
            result.update({"optimizer": kind, "options": options, "lrs": lrs, "dtype": dtype_name})
            cases[name + "_" + dtype_name] = result
    fixture = {"torch_version": torch.__version__, "steps": STEPS, "no_grad_steps": NO_GRAD,
               "params": spec, "cases": cases, "clip": clip_case(spec)}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(fixture, f, sort_keys=True, separators=(",", ":"))
        f.write("\n")
    print("wrote %s (%d cases)" % (args.out, len(cases)))


if __name__ == "__main__":
    main()
