#!/usr/bin/python3
"""What each position scheme adds to relpos's training step: bench_train runs of `none`
and of each scheme, paired and alternated, and the scheme/none ratios of their step times.

Each round runs, for every (L, precision) and every scheme S, `none` and S back to back
(S first in odd rounds, so that a drifting load favours neither), each a fresh process of
bench_train with one thread count. The ratio of a pair is S's `median_step_cpu_s` over
none's (process CPU time: with one thread it leaves out the waits for a core on a shared
machine), or with --statistic fastest of their fastest steps' (`fastest_step_cpu_s`: on a
shared machine the slower steps also measure the neighbours). The table gives, per
scheme, the median ratio over rounds and its range; a
scheme whose range reaches below 1 has no excess that this machine can tell from noise.
With --gemm it also times relpos's own matmul in each precision at the start and the end
(bench_train --gemm) and gives each scheme's model FLOP rate, from CPU time, as a share of
the faster of those rates (issue 24, target 1). Raw JSON lines go to --jsonl (appended);
--summarize FILE... prints the table from such files without running anything, so that
rounds taken in several short windows (e.g. with a background job paused) add up.
Standard library only.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

from train_throughput import int_list, name_list

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMES = ("sinusoidal", "learned", "t5", "shaw", "xl", "alibi", "rope", "kerple")
PRECISIONS = ("fp32", "bf16")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--schemes", default="t5,shaw,xl,alibi,rope,kerple",
                   type=lambda t: name_list(t, SCHEMES), help="comma-separated, besides none")
    p.add_argument("--lengths", default=[128], type=int_list)
    p.add_argument("--precisions", default=["bf16"], type=lambda t: name_list(t, PRECISIONS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=4, help="timed steps per run")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps per run")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--gemm", action="store_true",
                   help="also time relpos's matmul rate per precision (start and end)")
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--jsonl", default="", help="append every raw JSON line to this file")
    p.add_argument("--label", default="run", help="names this invocation's rounds in --jsonl")
    p.add_argument("--statistic", choices=("median", "fastest"), default="median",
                   help="of each run's steps: the median step's CPU time, or the fastest's")
    p.add_argument("--summarize", nargs="+", metavar="FILE",
                   help="print the table from --jsonl files; run nothing")
    args = p.parse_args()
    if args.rounds < 1 or args.steps < 1 or args.warmup < 0 or args.threads < 1:
        p.error("need --rounds >= 1, --steps >= 1, --warmup >= 0, --threads >= 1")
    if not args.lengths or min(args.lengths) < 2:
        p.error(f"--lengths: need lengths >= 2, got {args.lengths}")
    return args


def die(message):
    print(f"scheme_overhead: {message}", file=sys.stderr)
    sys.exit(2)


def run_bench(args, extra):
    binary = os.path.join(args.build_dir, "bench", "bench_train")
    command = [binary, "--threads", str(args.threads)] + extra
    done = subprocess.run(command, capture_output=True, text=True,
                          env=dict(os.environ, OMP_NUM_THREADS=str(args.threads)))
    lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
    if done.returncode != 0 or not lines:
        die(f"{' '.join(command)} failed (exit {done.returncode}): "
            f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    return json.loads(lines[-1])


def record(args, row, out):
    row["label"] = args.label
    print(json.dumps(row, sort_keys=True), file=sys.stderr)
    if out:
        out.write(json.dumps(row, sort_keys=True) + "\n")
        out.flush()


def measure(args):
    binary = os.path.join(args.build_dir, "bench", "bench_train")
    if not os.access(binary, os.X_OK):
        die(f"{binary} not found; build it with cmake --build {args.build_dir} -j2 "
            "--target bench_train")
    rows = []
    with open(args.jsonl, "a") if args.jsonl else open(os.devnull, "w") as out:
        def gemm_probe(when):
            for precision in args.precisions if args.gemm else []:
                row = run_bench(args, ["--gemm", precision])
                row.update(probe=when, precision=precision)
                record(args, row, out)
                rows.append(row)

        gemm_probe("start")
        for r in range(args.rounds):
            for length in args.lengths:
                for precision in args.precisions:
                    for scheme in args.schemes:
                        pair = [scheme, "none"] if r % 2 else ["none", scheme]
                        for name in pair:
                            row = run_bench(args, [
                                "--scheme", name, "--len", str(length), "--steps",
                                str(args.steps), "--warmup", str(args.warmup), "--set",
                                f"train.precision={precision}"])
                            row.update(round=r, pair=scheme, precision=precision)
                            record(args, row, out)
                            rows.append(row)
        gemm_probe("end")
    return rows


def summarize(rows, statistic):
    """Per (L, precision, scheme): ratios of paired runs, and target 1's share."""
    field = f"{statistic}_step_cpu_s"
    gemm = {}
    for row in rows:
        if "probe" in row:
            gemm[row["precision"]] = max(gemm.get(row["precision"], 0.0), row["gflops"])
    pairs = {}
    for row in rows:
        if "pair" in row:
            key = (row["len"], row["precision"], row["pair"], row["label"], row["round"])
            pairs.setdefault(key, {})[row["scheme"]] = row
    table = {}
    for (length, precision, scheme, _, _), pair in sorted(pairs.items()):
        if scheme not in pair or "none" not in pair:
            continue
        entry = table.setdefault((length, precision, scheme), {"ratio": [], "s": [], "n": [],
                                                                "rate": [], "none_rate": []})
        s, n = pair[scheme], pair["none"]
        if field not in s or field not in n:
            die(f"{statistic}: a run has no {field} (an older bench_train?)")
        entry["ratio"].append(s[field] / n[field])
        entry["s"].append(s[field])
        entry["n"].append(n[field])
        # Model FLOPs per CPU second: with one thread, the rate without the waits for a core.
        for name, r in (("rate", s), ("none_rate", n)):
            tokens = r["batch"] * r["len"]
            entry[name].append(r["flops_per_token"] * tokens / r[field] / 1e9)
    print(f"{statistic} step CPU seconds of each run\n")
    print("| L | precision | scheme | rounds | scheme / none (median, range) | scheme CPU s "
          "| none CPU s | model GFLOP/s (scheme, none) | share of relpos matmul |")
    print("|---:|---|---|---:|---|---:|---:|---|---|")
    for (length, precision, scheme), e in sorted(table.items()):
        rate, none_rate = statistics.median(e["rate"]), statistics.median(e["none_rate"])
        share = (f"{rate / gemm[precision]:.0%}, none {none_rate / gemm[precision]:.0%}"
                 if precision in gemm else "not measured")
        print(f"| {length} | {precision} | {scheme} | {len(e['ratio'])} | "
              f"{statistics.median(e['ratio']):.3f} ({min(e['ratio']):.3f}–"
              f"{max(e['ratio']):.3f}) | {statistics.median(e['s']):.3f} | "
              f"{statistics.median(e['n']):.3f} | {rate:.0f}, {none_rate:.0f} | {share} |")
    for precision, rate in sorted(gemm.items()):
        print(f"\nrelpos matmul {precision}: {rate:.0f} GFLOP/s (faster of the start and end "
              "probes, bench_train --gemm)")


def main():
    args = parse_args()
    if args.summarize:
        rows = []
        for path in args.summarize:
            try:
                with open(path) as f:
                    rows += [json.loads(x) for x in f if x.strip()]
            except (OSError, json.JSONDecodeError) as e:
                die(f"{path}: cannot read JSON lines ({e})")
        summarize(rows, args.statistic)
    else:
        summarize(measure(args), args.statistic)


if __name__ == "__main__":
    main()
