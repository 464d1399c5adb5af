#!/usr/bin/python3
"""Raw torch.matmul rate on the GEMM shapes of the training benchmark's model, in
fp32 or bf16: the PyTorch counterpart of `bench_train --sgemm` (bench/README.md).

The shapes are the forward products of one block at 8192 tokens: (8192×256)·(256×256)
four times (q, k, v, output), (8192×256)·(256×1024) and (8192×1024)·(1024×256). Each
shape's rate comes from the median of --reps calls after a warm-up call; the combined
rate is the block's FLOPs over the sum of the medians, and best_gflops the same from
the fastest call of each shape. On the CPU, PyTorch 2.x runs bf16 matmul through
oneDNN and fp32 through MKL. Prints one JSON line.
"""
import argparse
import json
import statistics
import time

import torch

TOKENS = 8192
SHAPES = ((TOKENS, 256, 256, 4), (TOKENS, 256, 1024, 1), (TOKENS, 1024, 256, 1))  # m, k, n, count
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--reps", type=int, default=7, help="timed calls per shape")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if args.reps < 1 or args.threads < 1:
        parser.error("need --reps >= 1 and --threads >= 1")
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(11)
    dtype = DTYPES[args.dtype]

    rows, total_flops, total_seconds, best_seconds = [], 0.0, 0.0, 0.0
    for m, k, n, count in SHAPES:
        a = torch.randn(m, k, generator=generator).to(dtype)
        b = torch.randn(k, n, generator=generator).to(dtype)
        out = torch.empty(m, n, dtype=dtype)
        torch.matmul(a, b, out=out)  # warm-up
        seconds = []
        for _ in range(args.reps):
            start = time.perf_counter()
            torch.matmul(a, b, out=out)
            seconds.append(time.perf_counter() - start)
        median, best = statistics.median(seconds), min(seconds)
        flops = 2.0 * m * k * n
        rows.append({"m": m, "k": k, "n": n, "gflops": flops / median / 1e9,
                     "best_gflops": flops / best / 1e9})
        total_flops += count * flops
        total_seconds += count * median
        best_seconds += count * best
    print(json.dumps({
        "framework": "torch.matmul",
        "torch_version": torch.__version__,
        "dtype": args.dtype,
        "threads": torch.get_num_threads(),
        "reps": args.reps,
        "shapes": rows,
        "gflops": total_flops / total_seconds / 1e9,
        "best_gflops": total_flops / best_seconds / 1e9,
    }))


if __name__ == "__main__":
    main()
