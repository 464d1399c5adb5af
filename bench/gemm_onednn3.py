#!/usr/bin/python3
"""The model's 12 GEMMs through two relpos builds (two oneDNN versions) and torch.matmul.

Two oneDNN versions cannot share a process, so each build's bench_gemm_precision --json
(OpenBLAS f32, relpos's fp32 path = oneDNN f32, relpos's bf16 path with the operand rounding,
the raw oneDNN bf16 primitive, writing an f32 C and a bf16 C as torch.matmul does) runs as its own program, alternating with the other build's
(A B, then B A, ...) and with bench/gemm_torch.py --shapes step in fp32 and bf16, --rounds
times. Every program reports the fastest repetition of each shape; across rounds the fastest
is kept. Prints a markdown report: GFLOP/s per shape and over the 12 (their FLOPs over the
sum of their fastest times), and the ratios that decide whether the second oneDNN is worth
building against (bench/results/onednn3.md).

  python3 bench/gemm_onednn3.py --build-a build --build-b build-onednn3 \\
      --python /work/venv-torch/bin/python
"""
import argparse
import os
import sys

from gemm_mkl import Rates, cpu_name, run_json

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATHS = (("onednn-f32", "fp32"), ("relpos-bf16", "bf16 (rounding incl.)"),
         ("onednn-bf16", "bf16 raw"), ("onednn-bf16-c16", "bf16 raw, bf16 C"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-a", default=os.path.join(ROOT, "build"),
                        help="the baseline build (Debian's oneDNN)")
    parser.add_argument("--build-b", default=os.path.join(ROOT, "build-onednn3"),
                        help="the build against another oneDNN (-DRELPOS_ONEDNN_PREFIX)")
    parser.add_argument("--python", default=sys.executable, help="a Python with PyTorch 2.x")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=3, help="repetitions per shape and program")
    parser.add_argument("--seconds", type=float, default=0.1,
                        help="duration of one timed repetition in the C++ probes")
    args = parser.parse_args()
    if args.threads < 1 or args.rounds < 1 or args.reps < 1 or args.seconds <= 0:
        parser.error("need --threads, --rounds, --reps >= 1 and --seconds > 0")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    timing = ["--reps", str(args.reps), "--seconds", str(args.seconds)]
    relpos = {}
    for name, build in (("a", args.build_a), ("b", args.build_b)):
        exe = os.path.join(build, "bench", "bench_gemm_precision")
        if not os.access(exe, os.X_OK):
            parser.error(f"{exe} is missing: build the target bench_gemm_precision there")
        relpos[name] = [exe, "--json"] + timing
    torch = {d: [args.python, os.path.join(ROOT, "bench", "gemm_torch.py"), "--shapes", "step",
                 "--dtype", d, "--threads", str(args.threads), "--reps", str(max(args.reps, 5))]
             for d in ("fp32", "bf16")}

    rates, versions = Rates(), {}
    for r in range(args.rounds):
        order = ["a", "b"] if r % 2 == 0 else ["b", "a"]
        for program in order + ["torch:fp32", "torch:bf16"]:
            command = relpos[program] if program in relpos else torch[program.split(":")[1]]
            report = run_json(command, env)
            versions[program] = report.get("onednn_version") or report.get("torch_version")
            rates.read(program, report)
    if len(rates.shapes) != 12:
        sys.exit(f"gemm_onednn3: the programs reported {len(rates.shapes)} different shapes, "
                 "expected 12")

    va, vb = versions["a"], versions["b"]
    columns = [("torch:fp32", "torch fp32")]
    columns += [(f"{x}:onednn-f32", f"oneDNN {v} fp32") for x, v in (("a", va), ("b", vb))]
    columns += [("torch:bf16", "torch bf16")]
    for path, label in PATHS[1:]:
        columns += [(f"{x}:{path}", f"oneDNN {v} {label}") for x, v in (("a", va), ("b", vb))]
    print(f"# The model's 12 GEMMs: oneDNN {va} against {vb}, torch.matmul ({cpu_name()})\n")
    print(f"{args.threads} threads, {args.rounds} rounds (the two builds alternating), fastest "
          f"repetition; torch {versions['torch:bf16']}. GFLOP/s.\n")
    rates.print_table(columns)

    ratios = []
    for path, label in PATHS:
        ratios.append((f"b:{path}", f"a:{path}", f"oneDNN {vb} / {va}, {label}"))
    for path, label in PATHS:
        dtype = "fp32" if path.endswith("f32") else "bf16"
        for x, v in (("a", va), ("b", vb)):
            ratios.append((f"{x}:{path}", f"torch:{dtype}", f"oneDNN {v} {label} / torch {dtype}"))
    print("\n| ratio | over the 12 | above 1.3 | below 1.0 | range |")
    print("|---|---:|---:|---:|---|")
    for num, den, label in ratios:
        if rates.total(num) is None or rates.total(den) is None:
            continue
        per_shape = [rates.best[num, s] / rates.best[den, s] for s in rates.shapes]
        print(f"| {label} | {rates.total(num) / rates.total(den):.2f} | "
              f"{sum(x > 1.3 for x in per_shape)} | "
              f"{sum(x < 1.0 for x in per_shape)} | {min(per_shape):.2f}–{max(per_shape):.2f} |")


if __name__ == "__main__":
    main()
