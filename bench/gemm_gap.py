#!/usr/bin/python3
"""relpos's bf16 GEMMs against torch.matmul bf16, call by call, from oneDNN's own log.

Runs, --rounds times in turn, build/bench/bench_gemm_precision and bench/gemm_torch.py
--shapes step --dtype bf16 with ONEDNN_VERBOSE=1 and the same thread count, and reads every
matmul that oneDNN logged: the implementation it chose, the operands' data types and
layouts, the attributes, and the time oneDNN itself measured inside the call (exec_time).
The first logged call of each primitive is left out (it may include one-time work), the
rest give the median and the fastest call. Prints a markdown report: one table per path
with, per shape, the median and fastest ms from oneDNN's log, the program's own rate (its
timing method), and the ratios to torch (bench/results/gemm-gap.md). --baseline runs an
earlier build's probe too, in turn with the build's, so that before and after come from one
invocation. Programs run one after another, so on a shared machine their ratios carry the
load's changes; bench/gemm_in_torch.py alternates the two libraries call by call instead.

  python3 bench/gemm_gap.py --python /work/venv-torch/bin/python --threads 1 \\
      --baseline /tmp/bench_gemm_precision.before
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# One operand of oneDNN's log: 2.x writes "src_bf16::blocked:ab:f0", 3.x "src:bf16::blocked:ab::f0".
OPERAND = re.compile(r"^(src|wei|dst)[_:](\w+?)::blocked:(\w+)")
# A batched (3-d) operand's layout in the 2-d terms of its matrices.
LAYOUT_2D = {"abc": "ab", "acb": "ba", "ab": "ab", "ba": "ba"}
# relpos's paths in bench_gemm_precision, told apart by what oneDNN logs of them.
PATH_NAMES = {
    ("f32", 3, "f32"): "relpos fp32 (oneDNN f32)",
    ("bf16", 3, "f32"): "relpos bf16 primitive (operands rounded before)",
    ("bf16", 2, "f32"): "raw bf16, f32 C",
    ("bf16", 2, "bf16"): "raw bf16, bf16 C",
}
TORCH_PATH = "torch.matmul bf16 (bf16 C)"


def products(log):
    """Every logged matmul: (implementation, operands, attributes, problem, ms)."""
    for line in log.splitlines():
        fields = line.split(",")
        if not fields[0].endswith("_verbose") or "exec" not in fields:
            continue
        at = fields.index("exec")
        if len(fields) < at + 10:
            continue
        try:
            ms = float(fields[at + 9])
        except ValueError:
            continue
        if fields[at + 2] != "matmul":
            continue
        operands = {}
        for token in fields[at + 5].split():
            found = OPERAND.match(token)
            if found:
                operands[found.group(1)] = (found.group(2), found.group(3))
        yield fields[at + 3], operands, fields[at + 6].strip(), fields[at + 8], ms


def shape_of(operands, problem):
    """(m, k, n, layout of A, layout of B) from a logged problem such as 8192x256:256x768."""
    dims = [[int(x) for x in part.split("x")] for part in problem.split(":")]
    (m, k), n = dims[0][-2:], dims[1][-1]
    return m, k, n, LAYOUT_2D[operands["src"][1]], LAYOUT_2D[operands["wei"][1]]


def what_of(m, k, n, a_layout, b_layout):
    """The product's role, in bench/model_gemms.h's words."""
    if a_layout == "ba":
        return f"dzᵀ·x {m}×{n}×{k}"
    return f"x·Wᵀ {m}×{n}×{k}" if b_layout == "ba" else f"dz·W {m}×{n}×{k}"


class Calls:
    """Every call's ms, per (path, shape), with what oneDNN said it ran."""

    def __init__(self):
        self.ms = defaultdict(list)
        self.how = {}

    def read(self, log, program, prefix=""):
        first_seen = set()
        for impl, operands, attrs, problem, ms in products(log):
            ndims = len(problem.split(":")[0].split("x"))
            if program == "torch":
                path = TORCH_PATH
            else:
                path = PATH_NAMES.get((operands["src"][0], ndims, operands["dst"][0]))
                if path is None:
                    continue
                path = prefix + path
            shape = shape_of(operands, problem)
            if (path, shape) not in first_seen:  # the first call of each primitive
                first_seen.add((path, shape))
                continue
            self.ms[path, shape].append(ms)
            layouts = " ".join(f"{k}:{t}:{lay}" for k, (t, lay) in sorted(operands.items()))
            self.how[path, shape] = (impl, layouts, attrs or "–")


def run(command, env):
    print("$ " + " ".join(command), file=sys.stderr, flush=True)
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    return done.stdout, done.stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--baseline", help="another bench_gemm_precision (an earlier build), "
                        "run in turn with the build's; its paths are labelled 'before:'")
    parser.add_argument("--python", default=sys.executable, help="a Python with PyTorch 2.x")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--reps", type=int, default=2, help="relpos: repetitions per shape")
    parser.add_argument("--seconds", type=float, default=0.03,
                        help="relpos: duration of one timed repetition")
    parser.add_argument("--torch-reps", type=int, default=9, help="torch: timed calls per shape")
    args = parser.parse_args()
    if min(args.threads, args.rounds, args.reps, args.torch_reps) < 1 or args.seconds <= 0:
        parser.error("need --threads, --rounds, --reps, --torch-reps >= 1 and --seconds > 0")
    exe = os.path.join(args.build_dir, "bench", "bench_gemm_precision")
    if not os.access(exe, os.X_OK):
        parser.error(f"{exe} is missing: build the target bench_gemm_precision")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), ONEDNN_VERBOSE="1",
               DNNL_VERBOSE="1")
    timing = ["--json", "--reps", str(args.reps), "--seconds", str(args.seconds)]
    programs = [("relpos", "", [exe] + timing)]
    if args.baseline:
        programs.append(("relpos", "before: ", [args.baseline] + timing))
    torch = [args.python, os.path.join(ROOT, "bench", "gemm_torch.py"), "--shapes", "step",
             "--dtype", "bf16", "--threads", str(args.threads), "--reps", str(args.torch_reps)]

    calls, own, versions = Calls(), defaultdict(float), {}
    for r in range(args.rounds):
        order = programs if r % 2 == 0 else programs[::-1]
        for program, prefix, command in order + [("torch", "", torch)]:
            out, err = run(command, env)
            calls.read(out + err, program, prefix)
            version = re.search(r"oneDNN v([\d.]+)", out + err)
            versions[program] = version.group(1) if version else "?"
            report = json.loads([x for x in out.splitlines() if x.startswith("{")][-1])
            for row in report["shapes"]:
                a = "ba" if row["trans_a"] else "ab"
                b = "ba" if row["trans_b"] else "ab"
                shape = (row["m"], row["k"], row["n"], a, b)
                rates = ({TORCH_PATH: row["best_gflops"]} if program == "torch"
                         else {prefix + PATH_NAMES[k]: v for k, v in
                               (((("f32", 3, "f32")), row["gflops"].get("onednn-f32")),
                                (("bf16", 3, "f32"), row["gflops"].get("relpos-bf16")),
                                (("bf16", 2, "f32"), row["gflops"].get("onednn-bf16")),
                                (("bf16", 2, "bf16"), row["gflops"].get("onednn-bf16-c16")))
                               if v is not None})
                for path, rate in rates.items():
                    own[path, shape] = max(own[path, shape], rate)

    shapes = sorted({s for _, s in calls.ms}, key=lambda s: (s[0] != 8192, s[3], s[4], s))
    print(f"# bf16 GEMMs call by call: relpos (oneDNN {versions.get('relpos')}) against "
          f"torch.matmul (oneDNN {versions.get('torch')}), {args.threads} thread(s)\n")
    print(f"{args.rounds} rounds; ms per call from ONEDNN_VERBOSE's exec_time (each "
          "primitive's first logged call left out): median / fastest. \"own\": the program's "
          "own timing, GFLOP/s (relpos: mean of a burst of calls, fastest burst; torch: "
          "fastest single call).\n")
    paths = [TORCH_PATH]
    for name in PATH_NAMES.values():
        paths += [p for p in ("before: " + name, name) if any(q == p for q, _ in calls.ms)]
    for path in paths:
        print(f"\n## {path}\n")
        print("| GEMM | implementation | operands | attributes | calls | median ms | fastest ms "
              "| GFLOP/s (median) | own GFLOP/s | this / torch (medians) |")
        print("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
        total_flops = total_median = total_torch = own_seconds = torch_own_seconds = 0.0
        for shape in shapes:
            times = calls.ms.get((path, shape))
            if not times:
                continue
            m, k, n = shape[:3]
            flops = 2.0 * m * k * n
            med = statistics.median(times)
            torch_times = calls.ms.get((TORCH_PATH, shape))
            torch_med = statistics.median(torch_times) if torch_times else float("nan")
            total_flops += flops
            total_median += med
            total_torch += torch_med
            own_seconds += flops / (own.get((path, shape)) or float("nan"))
            torch_own_seconds += flops / (own.get((TORCH_PATH, shape)) or float("nan"))
            impl, layouts, attrs = calls.how[path, shape]
            print(f"| {what_of(*shape)} | {impl} | {layouts} | {attrs} | {len(times)} | "
                  f"{med:.3f} | {min(times):.3f} | {flops / med * 1e-6:,.0f} | "
                  f"{own.get((path, shape), 0):,.0f} | {torch_med / med:.2f} |")
        if total_median > 0:
            print(f"| all | | | | | {total_median:.2f} | | "
                  f"{total_flops / total_median * 1e-6:,.0f} | {total_flops / own_seconds:,.0f} | "
                  f"{total_torch / total_median:.2f} |")
            print(f"\nOver the 12, own timing: this / torch = "
                  f"{torch_own_seconds / own_seconds:.2f}; oneDNN's log (medians): "
                  f"{total_torch / total_median:.2f}.")


if __name__ == "__main__":
    main()
