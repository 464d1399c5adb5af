"""The PyTorch twin of bench/mlp_step.cpp: one training step of a two-layer MLP,
y = gelu_tanh(x W1 + b1) W2 + b2, loss = mean((y - t)^2), backward, then plain
SGD (p -= lr * grad) under no_grad. Prints the median steps/s of --reps timed
runs of --steps steps each, in the same format as bench_mlp.

Run with /usr/bin/python3 (the interpreter that has torch 1.13).
"""
import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--dim", type=int, default=512, help="input and output width")
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--steps", type=int, default=20, help="steps per timed run")
    parser.add_argument("--reps", type=int, default=5, help="timed runs (median reported)")
    parser.add_argument("--threads", type=int,
                        default=int(os.environ.get("OMP_NUM_THREADS", "2")))
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(7)
    d, h = args.dim, args.hidden
    params = [
        (torch.randn(d, h) / d ** 0.5).requires_grad_(),  # W1 (D, H)
        torch.zeros(h, requires_grad=True),               # b1 (H)
        (torch.randn(h, d) / h ** 0.5).requires_grad_(),  # W2 (H, D)
        torch.zeros(d, requires_grad=True),               # b2 (D)
    ]
    w1, b1, w2, b2 = params
    x = torch.randn(args.batch, d)
    target = torch.randn(args.batch, d)
    lr = 1e-3

    def step() -> float:
        for p in params:
            p.grad = None
        hidden = F.gelu(x @ w1 + b1, approximate="tanh")  # (B, H)
        y = hidden @ w2 + b2                               # (B, D)
        loss = ((y - target) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for p in params:
                p.sub_(lr * p.grad)
        return loss.item()

    loss = 0.0
    for _ in range(args.warmup):
        loss = step()
    rates = []
    for _ in range(args.reps):
        start = time.perf_counter()
        for _ in range(args.steps):
            loss = step()
        rates.append(args.steps / (time.perf_counter() - start))
    print(f"torch MLP step: batch {args.batch}, {d}->{h}->{d}, "
          f"{torch.get_num_threads()} threads, final loss {loss:.4f}")
    print(f"steps/s {statistics.median(rates):.3f}")


if __name__ == "__main__":
    main()
