#!/usr/bin/python3
"""relpos's bf16 products and torch.matmul bf16 in one process, alternating call by call.

Loads build/bench/libbench_gemm_in_torch.so (Debian's oneDNN 2.6, called as
autograd/cpu/onednn_gemm.cpp calls it) with ctypes into a Python process with PyTorch (whose
oneDNN 3.x has hidden symbols, so the two do not clash, and which share one libgomp), makes
bf16 operands as torch tensors (64-byte aligned), and times each of the model's 12 GEMMs
(bench/model_gemms.h, bench/gemm_torch.py --shapes step) through:

  torch      torch.matmul on the bf16 views (writes a bf16 C), as gemm_torch.py does;
  matmul     oneDNN 2.6's matmul primitive, f32 C (relpos's bf16 products before this
             branch, operands already bf16);
  matmul16   the same writing a bf16 C (what a bf16 output would give);
  ip         oneDNN 2.6's inner product where A is not transposed (x·Wᵀ, dz·W), W reordered
             into its blocked layout on every call (on the calling thread alone), the matmul
             for dzᵀ·x; f32 C. Measured as an alternative, not used by relpos (faster than
             the matmul in most runs, but not on a 2-thread training step:
             bench/results/gemm-gap.md).
  ipkept     the same with W reordered once, outside the timing: what a blocked copy of W
             kept across a training step would give.

Each repetition runs every path once on the shape, in turn; every call is timed on its own
(perf_counter around one call, after one warm-up call per path). Prints a markdown table:
median ms per path and the ratio of each path's rate to torch's, per shape and over the 12
(their FLOPs over the sum of their medians); and the same from the fastest calls.

  OMP_NUM_THREADS=1 /work/venv-torch/bin/python bench/gemm_in_torch.py --threads 1
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

import torch

from gemm_mkl import cpu_name
from gemm_torch import STEP

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The model's 12 products, each linear layer's x·Wᵀ, dz·W and dzᵀ·x in that order (gemm_torch.py's
# STEP, (m, k, n, trans_a, trans_b, count)), as (what, m, n, k, trans_a, trans_b).
WHATS = ("x·Wᵀ", "dz·W", "dzᵀ·x")
GEMMS = tuple((WHATS[i % 3], m, n, k, trans_a, trans_b)
              for i, (m, k, n, trans_a, trans_b, _) in enumerate(STEP))
PATHS = ("torch", "matmul", "matmul16", "ip", "ipkept")


def load(path):
    lib = ctypes.CDLL(path)
    lib.relpos_gemm_make.restype = ctypes.c_void_p
    lib.relpos_gemm_make.argtypes = [ctypes.c_int64] * 3 + [ctypes.c_int] * 4 + [ctypes.c_void_p] * 3
    lib.relpos_gemm_run.argtypes = [ctypes.c_void_p]
    lib.relpos_gemm_free.argtypes = [ctypes.c_void_p]
    lib.relpos_gemm_onednn_version.restype = ctypes.c_char_p
    return lib


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lib", default=os.path.join(ROOT, "build", "bench",
                                                      "libbench_gemm_in_torch.so"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--reps", type=int, default=15, help="timed calls per path and shape")
    args = parser.parse_args()
    if args.threads < 1 or args.reps < 1:
        parser.error("need --threads >= 1 and --reps >= 1")
    if not os.path.exists(args.lib):
        parser.error(f"{args.lib} is missing: build the target bench_gemm_in_torch")
    torch.set_num_threads(args.threads)
    lib = load(args.lib)
    generator = torch.Generator().manual_seed(11)

    rows, totals, best_totals = [], {p: 0.0 for p in PATHS}, {p: 0.0 for p in PATHS}
    total_flops = 0.0
    for what, m, n, k, trans_a, trans_b in GEMMS:
        # Stored as relpos stores them: A (k, m) when trans_a, B (n, k) when trans_b.
        a = torch.randn(*((k, m) if trans_a else (m, k)), generator=generator).to(torch.bfloat16)
        b = torch.randn(*((n, k) if trans_b else (k, n)), generator=generator).to(torch.bfloat16)
        a_op, b_op = (a.t() if trans_a else a), (b.t() if trans_b else b)
        c16 = torch.empty(m, n, dtype=torch.bfloat16)
        c32 = torch.empty(m, n, dtype=torch.float32)
        c16b = torch.empty(m, n, dtype=torch.bfloat16)
        handles = {}

        def make(kind, bf16_c, c):
            h = lib.relpos_gemm_make(m, n, k, int(trans_a), int(trans_b), kind, bf16_c,
                                     a.data_ptr(), b.data_ptr(), c.data_ptr())
            if not h:
                sys.exit(f"gemm_in_torch: oneDNN refused {what} {m}×{n}×{k}")
            handles[len(handles)] = h
            return h

        h_matmul, h_matmul16 = make(0, 0, c32), make(0, 1, c16b)
        h_ip = make(1, 0, c32) if not trans_a else h_matmul
        h_ipkept = make(2, 0, c32) if not trans_a else h_matmul
        calls = {"torch": lambda: torch.matmul(a_op, b_op, out=c16),
                 "matmul": lambda: lib.relpos_gemm_run(h_matmul),
                 "matmul16": lambda: lib.relpos_gemm_run(h_matmul16),
                 "ip": lambda: lib.relpos_gemm_run(h_ip),
                 "ipkept": lambda: lib.relpos_gemm_run(h_ipkept)}
        for call in calls.values():  # warm-up: first-call work left out
            call()
        seconds = {p: [] for p in PATHS}
        for _ in range(args.reps):
            for p in PATHS:
                start = time.perf_counter()
                calls[p]()
                seconds[p].append(time.perf_counter() - start)
        for h in handles.values():
            lib.relpos_gemm_free(h)
        flops = 2.0 * m * n * k
        total_flops += flops
        med = {p: statistics.median(s) for p, s in seconds.items()}
        best = {p: min(s) for p, s in seconds.items()}
        for p in PATHS:
            totals[p] += med[p]
            best_totals[p] += best[p]
        rows.append((f"{what} {m}×{n}×{k}", med, best))

    print(f"# relpos's bf16 products (oneDNN {lib.relpos_gemm_onednn_version().decode()}) and "
          f"torch.matmul (torch {torch.__version__}) in one process\n")
    print(f"{cpu_name()}, {args.threads} thread(s), {args.reps} calls per path and shape, the "
          "paths alternating call by call. ms: median; ratios: the path's rate / torch's.\n")
    print("| GEMM | torch ms | matmul ms | matmul16 ms | ip ms | ipkept ms | matmul / torch | "
          "matmul16 / torch | ip / torch | ipkept / torch | ip / matmul |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, med, _ in rows:
        print(f"| {name} | " + " | ".join(f"{med[p] * 1e3:.3f}" for p in PATHS) + " | "
              + " | ".join(f"{med['torch'] / med[p]:.2f}" for p in PATHS[1:])
              + f" | {med['matmul'] / med['ip']:.2f} |")
    print("| all 12, medians | " + " | ".join(f"{totals[p] * 1e3:.2f}" for p in PATHS) + " | "
          + " | ".join(f"**{totals['torch'] / totals[p]:.2f}**" for p in PATHS[1:])
          + f" | **{totals['matmul'] / totals['ip']:.2f}** |")
    print("| all 12, fastest calls | " + " | ".join(f"{best_totals[p] * 1e3:.2f}" for p in PATHS)
          + " | " + " | ".join(f"{best_totals['torch'] / best_totals[p]:.2f}" for p in PATHS[1:])
          + f" | {best_totals['matmul'] / best_totals['ip']:.2f} |")
    print(f"\ntorch over the 12: {total_flops / totals['torch'] * 1e-9:,.0f} GFLOP/s (medians), "
          f"{total_flops / best_totals['torch'] * 1e-9:,.0f} (fastest calls); relpos's matmul "
          f"{total_flops / totals['matmul'] * 1e-9:,.0f} and "
          f"{total_flops / best_totals['matmul'] * 1e-9:,.0f}.")


if __name__ == "__main__":
    main()
