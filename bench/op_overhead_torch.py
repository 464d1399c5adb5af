"""The PyTorch twin of bench/op_overhead_bench.cpp: a chain of alternating
add/mul ops on float32[4] tensors, recorded then backpropagated (y.backward(1)),
and the same chain under no_grad; process CPU time per op in microseconds,
medians over chains, printed as the same markdown table as bench_overhead.

Run with /usr/bin/python3 (the interpreter that has torch 1.13).
"""
import argparse
import os
import statistics
import time

import torch


def chain(x: torch.Tensor, c: torch.Tensor, ops: int) -> torch.Tensor:
    y = x
    for i in range(ops):
        y = torch.add(y, c) if i % 2 == 0 else torch.mul(y, c)
    return y


def time_chain(operand_requires_grad: bool, ops: int, reps: int) -> tuple:
    x = torch.full((4,), 0.5, requires_grad=True)
    c = torch.full((4,), 1.0, requires_grad=operand_requires_grad)
    seed = torch.ones(4)
    forward, backward, no_grad = [], [], []
    for _ in range(reps):
        x.grad = None
        c.grad = None
        t0 = time.process_time()
        y = chain(x, c, ops)
        t1 = time.process_time()
        y.backward(seed)
        t2 = time.process_time()
        forward.append(t1 - t0)
        backward.append(t2 - t1)
        with torch.no_grad():
            t0 = time.process_time()
            chain(x, c, ops)
            no_grad.append(time.process_time() - t0)
    to_us = 1e6 / ops
    return tuple(statistics.median(v) * to_us for v in (forward, backward, no_grad))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ops", type=int, default=1000, help="ops in the chain")
    parser.add_argument("--reps", type=int, default=200, help="chains timed (median reported)")
    parser.add_argument("--threads", type=int,
                        default=int(os.environ.get("OMP_NUM_THREADS", "2")))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    print(f"Per-op overhead, chain of {args.ops} add/mul ops on f32[4], "
          f"median of {args.reps} chains (CPU µs/op), PyTorch {torch.__version__}\n")
    print("| second operand | recorded fwd | its backward | fwd+bwd | no-grad fwd |")
    print("|---|---:|---:|---:|---:|")
    for requires_grad in (False, True):
        fwd, bwd, plain = time_chain(requires_grad, args.ops, args.reps)
        label = "leaf, requires grad" if requires_grad else "constant"
        print(f"| {label} | {fwd:.2f} | {bwd:.2f} | {fwd + bwd:.2f} | {plain:.2f} |")


if __name__ == "__main__":
    main()
