#!/usr/bin/python3
"""Raw torch.matmul rate on the GEMM shapes of the training benchmark's model, in
fp32 or bf16: the PyTorch counterpart of `bench_train --gemm` (bench/README.md).

--shapes forward (the default): the forward products of one block at 8192 tokens:
(8192×256)·(256×256) four times (q, k, v, output), (8192×256)·(256×1024) and
(8192×1024)·(1024×256). --shapes step: the 12 products of bench_gemm_precision and
bench_gemm_mkl, each linear layer's x·Wᵀ, dz·W and dzᵀ·x, with the transposed operand
passed as a transposed view (as autograd does), each once. Each shape's rate comes from
the median of --reps calls after a warm-up call; the combined rate is the FLOPs over the
sum of the medians, and best_gflops the same from the fastest call of each shape. On the
CPU, PyTorch 2.x runs bf16 matmul through oneDNN and fp32 through MKL. Prints one JSON line.
"""
import argparse
import json
import statistics
import time

import torch

TOKENS = 8192
FORWARD = ((TOKENS, 256, 256, False, False, 4), (TOKENS, 256, 1024, False, False, 1),
           (TOKENS, 1024, 256, False, False, 1))  # m, k, n, trans_a, trans_b, count


def linear_gemms(tokens, d_in, d_out):
    """A linear layer d_in -> d_out: x·Wᵀ, dz·W, dzᵀ·x as (m, k, n, trans_a, trans_b, 1)."""
    return ((tokens, d_in, d_out, False, True, 1), (tokens, d_out, d_in, False, False, 1),
            (d_out, tokens, d_in, True, False, 1))


STEP = (linear_gemms(TOKENS, 256, 768) + linear_gemms(TOKENS, 256, 256)
        + linear_gemms(TOKENS, 256, 1024) + linear_gemms(TOKENS, 1024, 256))
SHAPES = {"forward": FORWARD, "step": STEP}
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--reps", type=int, default=7, help="timed calls per shape")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--shapes", choices=sorted(SHAPES), default="forward")
    args = parser.parse_args()
    if args.reps < 1 or args.threads < 1:
        parser.error("need --reps >= 1 and --threads >= 1")
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(11)
    dtype = DTYPES[args.dtype]

    rows, total_flops, total_seconds, best_seconds = [], 0.0, 0.0, 0.0
    for m, k, n, trans_a, trans_b, count in SHAPES[args.shapes]:
        # A transposed operand is stored as op(x)ᵀ, row-major, and passed as a view.
        a = torch.randn(*((k, m) if trans_a else (m, k)), generator=generator).to(dtype)
        b = torch.randn(*((n, k) if trans_b else (k, n)), generator=generator).to(dtype)
        a, b = (a.t() if trans_a else a), (b.t() if trans_b else b)
        out = torch.empty(m, n, dtype=dtype)
        torch.matmul(a, b, out=out)  # warm-up
        seconds = []
        for _ in range(args.reps):
            start = time.perf_counter()
            torch.matmul(a, b, out=out)
            seconds.append(time.perf_counter() - start)
        median, best = statistics.median(seconds), min(seconds)
        flops = 2.0 * m * k * n
        rows.append({"m": m, "k": k, "n": n, "trans_a": trans_a, "trans_b": trans_b,
                     "gflops": flops / median / 1e9,
                     "best_gflops": flops / best / 1e9})
        total_flops += count * flops
        total_seconds += count * median
        best_seconds += count * best
    print(json.dumps({
        "framework": "torch.matmul",
        "torch_version": torch.__version__,
        "dtype": args.dtype,
        "shapes_of": args.shapes,
        "threads": torch.get_num_threads(),
        "reps": args.reps,
        "shapes": rows,
        "gflops": total_flops / total_seconds / 1e9,
        "best_gflops": total_flops / best_seconds / 1e9,
    }))


if __name__ == "__main__":
    main()
