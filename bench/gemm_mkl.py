#!/usr/bin/python3
"""The model's 12 GEMMs through relpos's paths, oneMKL and torch.matmul, in one invocation.

Runs, --rounds times in turn: bench_gemm_precision --json (OpenBLAS f32, relpos's fp32
path = oneDNN f32, relpos's bf16 path with the operand rounding, the raw oneDNN bf16
primitive), bench_gemm_mkl (cblas_sgemm; cblas_gemm_bf16bf16f32 raw, after rounding, and
with the weight packed; oneDNN's primitive in f32 and bf16, interleaved with MKL in the same
process) and bench/gemm_torch.py --shapes step in fp32 and bf16. Every program reports the fastest
repetition of each shape; across rounds the fastest is kept. Prints a markdown report:
GFLOP/s per shape and over the 12 (their FLOPs over the sum of their fastest times), and
the ratios that decide whether MKL is worth wiring into relpos (bench/results/gemm-mkl.md).

  python3 bench/gemm_mkl.py --build-dir build --python /work/venv-torch/bin/python
"""
import argparse
import json
import os
import platform
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Column key -> label, in the table's order. Keys: "<program>:<path>"; "mkl:onednn-*" are
# oneDNN's primitive timed inside bench_gemm_mkl, interleaved with MKL.
COLUMNS = (
    ("torch:fp32", "torch fp32"),
    ("relpos:onednn-f32", "relpos fp32 (oneDNN)"),
    ("relpos:openblas-f32", "OpenBLAS sgemm"),
    ("mkl:onednn-f32", "oneDNN f32 ‡"),
    ("mkl:mkl-sgemm", "MKL sgemm ‡"),
    ("torch:bf16", "torch bf16"),
    ("relpos:relpos-bf16", "relpos bf16 (rounding incl.)"),
    ("mkl:onednn-bf16", "oneDNN bf16 raw ‡"),
    ("mkl:mkl-bf16", "MKL bf16 raw ‡"),
    ("mkl:mkl-bf16-packed", "MKL bf16 raw, W packed ‡"),
    ("mkl:mkl-bf16-round", "MKL bf16 (rounding incl.) ‡"),
)
# (numerator, denominator, label) of the ratio table.
RATIOS = (
    ("relpos:onednn-f32", "torch:fp32", "relpos fp32 / torch fp32"),
    ("relpos:relpos-bf16", "torch:bf16", "relpos bf16 (rounding incl.) / torch bf16"),
    ("mkl:onednn-bf16", "torch:bf16", "oneDNN bf16 raw / torch bf16"),
    ("mkl:mkl-sgemm", "torch:fp32", "MKL sgemm / torch fp32"),
    ("mkl:mkl-bf16", "torch:bf16", "MKL bf16 raw / torch bf16"),
    ("mkl:mkl-bf16-packed", "torch:bf16", "MKL bf16 W packed / torch bf16"),
    ("mkl:mkl-sgemm", "mkl:onednn-f32", "MKL sgemm / oneDNN f32 ‡"),
    ("mkl:mkl-bf16", "mkl:onednn-bf16", "MKL bf16 raw / oneDNN bf16 raw ‡"),
    ("mkl:mkl-bf16-packed", "mkl:onednn-bf16", "MKL bf16 W packed / oneDNN bf16 raw ‡"),
)


def run_json(command, env):
    print("$ " + " ".join(command), file=sys.stderr, flush=True)
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def shape_key(row):
    return (row["m"], row["n"], row["k"], bool(row["trans_a"]), bool(row["trans_b"]))


class Rates:
    """The fastest rate (GFLOP/s) of every (column, shape) over the reports read, and the
    shapes in the order first seen. A column is a torch program, or `program:path` for a
    relpos/MKL program's paths."""

    def __init__(self):
        self.best, self.shapes, self.names = {}, [], {}

    def read(self, program, report):
        for row in report["shapes"]:
            key = shape_key(row)
            if key not in self.names:
                self.shapes.append(key)
                self.names[key] = row.get("what", "")
            self.names[key] = self.names[key] or row.get("what", "")
            rates = ({program: row["best_gflops"]} if program.startswith("torch")
                     else {f"{program}:{p}": r for p, r in row["gflops"].items()})
            for column, rate in rates.items():
                self.best[column, key] = max(self.best.get((column, key), 0.0), rate)

    def total(self, column, over=None):
        """The rate of `column` over the shapes `over` (default all; None where one is missing)."""
        over = self.shapes if over is None else over
        if any((column, s) not in self.best for s in over):
            return None
        flops = [2.0 * m * n * k for m, n, k, _, _ in over]
        return sum(flops) / sum(f / self.best[column, s] for f, s in zip(flops, over))

    def print_table(self, columns):
        """One row a shape and one for all of them; `columns` are (column, label) pairs."""
        print("| GEMM | M×N×K | " + " | ".join(label for _, label in columns) + " |")
        print("|---|---|" + "---:|" * len(columns))
        for s in self.shapes:
            m, n, k, _, _ = s
            cells = [f"{self.best[c, s]:.0f}" if (c, s) in self.best else "–" for c, _ in columns]
            print(f"| {self.names[s]} | {m}×{n}×{k} | " + " | ".join(cells) + " |")
        totals = [self.total(c) for c, _ in columns]
        print(f"| all {len(self.shapes)} | | " +
              " | ".join(f"{t:.0f}" if t else "–" for t in totals) + " |")


def cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--python", default=sys.executable, help="a Python with PyTorch 2.x")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3, help="repetitions per shape and program")
    parser.add_argument("--seconds", type=float, default=0.1,
                        help="duration of one timed repetition in the C++ probes")
    args = parser.parse_args()
    if args.threads < 1 or args.rounds < 1 or args.reps < 1 or args.seconds <= 0:
        parser.error("need --threads, --rounds, --reps >= 1 and --seconds > 0")
    bench = os.path.join(args.build_dir, "bench")
    for name in ("bench_gemm_precision", "bench_gemm_mkl"):
        if not os.access(os.path.join(bench, name), os.X_OK):
            parser.error(f"{os.path.join(bench, name)} is missing: build it (bench_gemm_mkl needs "
                         "tools/install-mkl.sh and -DRELPOS_MKL_PREFIX=.venv-mkl)")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    timing = ["--reps", str(args.reps), "--seconds", str(args.seconds)]
    commands = {
        "relpos": [os.path.join(bench, "bench_gemm_precision"), "--json"] + timing,
        "mkl": [os.path.join(bench, "bench_gemm_mkl"), "--threads", str(args.threads)] + timing,
    }
    for dtype in ("fp32", "bf16"):
        commands["torch:" + dtype] = [args.python, os.path.join(ROOT, "bench", "gemm_torch.py"),
                                      "--shapes", "step", "--dtype", dtype, "--threads",
                                      str(args.threads), "--reps", str(max(args.reps, 5))]

    rates, meta = Rates(), {}
    for _ in range(args.rounds):
        for program, command in commands.items():
            meta[program] = run_json(command, env)
            rates.read(program, meta[program])
    if len(rates.shapes) != 12:
        sys.exit(f"gemm_mkl: the programs reported {len(rates.shapes)} different shapes, "
                 "expected 12")

    print(f"# The model's 12 GEMMs: relpos, oneMKL, torch.matmul ({cpu_name()})\n")
    print(f"{args.threads} threads, {args.rounds} rounds, fastest repetition; torch "
          f"{meta['torch:bf16'].get('torch_version')}, oneMKL {meta['mkl'].get('mkl_version')}. "
          "GFLOP/s.\n")
    rates.print_table(COLUMNS)
    print("\n‡ timed inside bench_gemm_mkl, the paths interleaved repetition by repetition: "
          "a load burst falls on both sides of their ratios alike.")

    print("\n| ratio | over the shapes both ran | shapes | above 1.3 | below 1.0 |")
    print("|---|---:|---:|---:|---:|")
    for num, den, label in RATIOS:
        over = [s for s in rates.shapes if (num, s) in rates.best and (den, s) in rates.best]
        if not over:
            continue
        per_shape = [rates.best[num, s] / rates.best[den, s] for s in over]
        print(f"| {label} | {rates.total(num, over) / rates.total(den, over):.2f} | {len(over)} | "
              f"{sum(r > 1.3 for r in per_shape)} | {sum(r < 1.0 for r in per_shape)} |")


if __name__ == "__main__":
    main()
