#!/usr/bin/python3
"""Where one bf16 training step goes, in PyTorch and in relpos, and the relpos/PyTorch ratio
that the linear layers' GEMMs (and attention) leave room for (issue 24, targets 2 and 3).

For each (scheme, L) of --cases, one invocation runs, in this order:

  PyTorch, each of --modes (bf16, compile-bf16: bench/train_torch.py's model and step,
      imported, not copied), in a subprocess of --python: --warmup untimed steps, --steps
      steps timed without the profiler (median), then --steps steps under torch.profiler
      (CPU activities, record_shapes). Each op's *self* time is put in one category
      (torch_category below), summed, divided by the steps and scaled from wall to CPU time
      by the profiled steps' process CPU time / wall time; `other` is the profiled steps'
      CPU time less GEMM and attention (Python, autograd's bookkeeping and every op that is
      neither). The GEMM time used in the bounds is further scaled by the unprofiled step
      time / the profiled one (the profiler's own cost).
  relpos: `perf record -F --frequency` (cpu-clock samples: CPU time) of `bench_train
      --threads 1 --set train.precision=bf16`, samples put in categories by shared object and
      symbol (relpos_category below). Samples include the process's start and the warm-up
      step: a category's time per step is its samples / frequency / (warm-up + timed steps),
      and the start's samples are in no category. `other` is bench_train's median step CPU
      time less GEMM and attention.
  Step times are process CPU time (one thread: the time the step ran, whoever else held
  the cores); wall times are kept beside them in the JSON and the first table.

Categories:
  gemm       the linear layers' products (qkv, out, fc1, fc2, the LM head, XL's W_r R),
             forward and backward. PyTorch: aten::mm, aten::addmm, aten::_addmm_activation,
             aten::linear, aten::matmul (their self time; oneDNN runs inside them) on
             operands that are not attention's. relpos: oneDNN's generated kernels (perf's
             [JIT] objects), libdnnl and libopenblas.
  attention  PyTorch: aten::bmm / aten::baddbmm (the attention products and Shaw's and XL's
             position products), softmax and its backward (not log_softmax: that is the
             loss), and every op with an input of 4 or more dimensions (B, H, L, ·) or whose
             last two dimensions are (L, L) (scores, masks and bias tables, their backward;
             RoPE's rotation of q and k). Under torch.compile, inductor's fused kernels
             (named by enabling torch._inductor.config.cpp.enable_kernel_profile) carry no
             shapes: one counts as attention when its name holds "softmax" (not
             "log_softmax"), so compile-bf16's attention share is a lower bound. relpos:
             the tiled attention kernel's functions (flash_*.cpp/h, bf16_gemm_rows.cpp,
             amx_tile_product.cpp) and the position ops beside it (relative gather/scatter,
             relative softmax, rotary): RELPOS_ATTENTION_FUNCTIONS.
  other      the rest: elementwise, normalisation, loss, optimizer, casts and rounding,
             copies, framework overhead, page faults.

Bounds, per (scheme, L), with T_torch the step CPU time of PyTorch's fastest mode:
  gemm_only        T_torch / relpos's GEMM time: relpos/PyTorch if every relpos pass but
                   the GEMMs cost nothing;
  gemm_attention   T_torch / (relpos's GEMM + attention time);
  *_torch_rate     the same with relpos's GEMM time times --gemm-ratio (relpos's raw bf16
                   GEMM rate / torch.matmul's on the model's 12 shapes, from
                   bench/gemm_in_torch.py): relpos's GEMMs at torch.matmul's rate;
  *_torch_gemm     the same with PyTorch's own in-step GEMM time (fastest mode) in place of
                   relpos's.
Each is compared with target 3's 2.0. L must differ from d_model (256): the (L, L) shape
rule would take the weights for attention.

  /usr/bin/python3 bench/step_shares.py --cases none:128,t5:128 --json shares.json
  /usr/bin/python3 bench/step_shares.py --from-json a.json b.json   # the tables again, and
      # where a (scheme, L) is in several files, each bound's median and range over them
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
DEFAULT_CASES = ("none:128,t5:128,alibi:128,rope:128,xl:128,shaw:128,kerple:128,"
                 "none:512,t5:512,shaw:512,none:1024,t5:1024,shaw:1024")
TARGET_RATIO = 2.0
CATEGORIES = ("gemm", "attention", "other")

TORCH_GEMM_OPS = {"aten::mm", "aten::addmm", "aten::_addmm_activation", "aten::linear",
                  "aten::matmul"}
TORCH_ATTENTION_OPS = {"aten::bmm", "aten::baddbmm"}

RELPOS_GEMM_OBJECTS = re.compile(r"^\[JIT\]|libdnnl|libopenblas")
RELPOS_ATTENTION_FUNCTIONS = (
    # flash_forward.cpp, flash_backward.cpp, flash_fire.h, flash_tile.h
    "forward_head", "online_softmax_row", "backward_head", "clipped_gradient_row",
    "logits_gradient_row", "store_tile", "sum_fire_gradients", "sum_over_batch", "zero_rows",
    "fire_gradient_row", "block_logits", "for_clipped_ranges", "head_rows", "head_rows_const",
    "position_gemm", "tile_gemm",
    # bf16_gemm_rows.cpp (used by the attention kernel alone)
    "bf16_gemm_rows", "bf16_gemm_rows_window", "bf16_products_native", "bf16_products_on_amx",
    "micro_row", "micro_tile", "native_gemm", "native_gemm_window", "pack_a_for_tiles",
    "pack_pairs_along_rows", "pack_pairs_of_rows", "pack_pairs_transposed", "packed_b_operand",
    "packed_product", "product_with_packed_b", "rounded_copy", "software_gemm", "transpose16",
    "transpose_words",
    # amx_tile_product.cpp
    "amx_tile_product", "block", "make_config", "store_scaled",
    # the backend's attention and position entry points, relative.cpp, relative_softmax.cpp,
    # rotary.cpp
    "flash_attention", "flash_attention_backward", "relative_gather", "relative_scatter",
    "relative_softmax", "relative_softmax_backward", "rotary", "gather_typed", "scatter_typed",
    "forward_typed", "backward_typed", "row_geometry", "rotary_typed",
)
RELPOS_ATTENTION = re.compile(r"::(?:%s)(?:<|\(|$|\s)" % "|".join(RELPOS_ATTENTION_FUNCTIONS))


def torch_category(name, shapes, length):
    """One profiler event's category from its name and its inputs' shapes."""
    if name in TORCH_ATTENTION_OPS or ("softmax" in name and "log_softmax" not in name):
        return "attention"
    if any(len(s) >= 4 or (len(s) >= 2 and s[-1] == s[-2] == length) for s in shapes
           if isinstance(s, (list, tuple))):
        return "attention"
    if name in TORCH_GEMM_OPS:
        return "gemm"
    return "other"


def relpos_category(dso, symbol):
    """One perf sample's category from its shared object and symbol."""
    if RELPOS_GEMM_OBJECTS.search(dso):
        return "gemm"
    return "attention" if RELPOS_ATTENTION.search(symbol) else "other"


def top(seconds_by_name, count=8):
    """The `count` largest entries, as {name: ms per step}."""
    ranked = sorted(seconds_by_name.items(), key=lambda item: -item[1])[:count]
    return {name: round(1e3 * s, 3) for name, s in ranked}


def profile_torch(args):
    """In the PyTorch process: time, then profile, one mode; print one JSON line."""
    sys.path.insert(0, BENCH)
    import torch
    import torch._inductor.config
    from torch.profiler import ProfilerActivity, profile
    from train_torch import MODES, SCHEMES, TOKENS_PER_STEP, make_step

    for flag, value, known in (("--cases", args.scheme, SCHEMES), ("--modes", args.mode, MODES)):
        if value not in known:
            print(f"step_shares: {flag}: unknown '{value}' (expected one of "
                  f"{', '.join(known)})", file=sys.stderr)
            sys.exit(2)

    torch._inductor.config.cpp.enable_kernel_profile = True  # names inductor's kernels
    torch.set_num_threads(args.threads)
    batch = max(1, TOKENS_PER_STEP // args.len)
    _, train_step = make_step(args.scheme, args.len, batch, args.mode)
    for _ in range(args.warmup):
        train_step()
    wall, cpu = [], []
    for _ in range(args.steps):
        start, start_cpu = time.perf_counter(), time.process_time()
        train_step()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(args.steps):
            train_step()
        profiled_wall = (time.perf_counter() - start) / args.steps
        profiled = (time.process_time() - start_cpu) / args.steps
    on_cpu = profiled / profiled_wall  # the profiler's times are wall: scaled to CPU time
    per_category = {c: 0.0 for c in CATEGORIES}
    per_op = {c: {} for c in CATEGORIES}
    for event in prof.events():
        category = torch_category(event.name, event.input_shapes or [], args.len)
        seconds = event.self_cpu_time_total * 1e-6 / args.steps * on_cpu
        per_category[category] += seconds
        per_op[category][event.name] = per_op[category].get(event.name, 0.0) + seconds
    per_category["other"] = profiled - per_category["gemm"] - per_category["attention"]
    print(json.dumps({
        "framework": "torch", "torch_version": torch.__version__, "mode": args.mode,
        "scheme": args.scheme, "len": args.len, "batch": batch, "threads": args.threads,
        "steps": args.steps, "step_wall_s": statistics.median(wall),
        "step_s": statistics.median(cpu),
        "profiled_step_wall_s": profiled_wall, "profiled_step_s": profiled,
        "seconds": per_category, "top_ops_ms": {c: top(per_op[c]) for c in ("gemm", "attention")},
        "top_other_ops_ms": top(per_op["other"]),
    }))


def check(out, command):
    """Exit with one line (the run's last line of stderr) if a run failed: status 2 where the
    run itself said its arguments were wrong, else 1."""
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines() or ["(no message)"]
        print(f"step_shares: {command[0]} ... {' '.join(command[-8:])}: exit "
              f"{out.returncode}: {lines[-1]}", file=sys.stderr)
        sys.exit(2 if out.returncode == 2 else 1)


def run_torch(args, scheme, length, mode):
    command = [args.python, os.path.abspath(__file__), "--torch-profile", "--scheme", scheme,
               "--len", str(length), "--mode", mode, "--steps", str(args.steps),
               "--warmup", str(args.warmup), "--threads", "1"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run(command, env=env, capture_output=True, text=True)
    check(out, command)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_relpos(args, scheme, length, scratch):
    binary = os.path.join(args.build_dir, "bench", "bench_train")
    data = os.path.join(scratch, f"{scheme}-{length}.perf")
    command = ["perf", "record", "-q", "-F", str(args.frequency), "-o", data, "--", binary,
               "--scheme", scheme, "--len", str(length), "--steps", str(args.steps),
               "--warmup", str(args.warmup), "--threads", "1", "--set", "train.precision=bf16"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run(command, env=env, capture_output=True, text=True)
    check(out, command)
    run = json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])
    report = subprocess.run(
        ["perf", "report", "-i", data, "--no-children", "--sort", "dso,sym", "-F",
         "sample,dso,sym", "--stdio", "-t", "\t"], capture_output=True, text=True, check=True)
    samples = {c: 0 for c in CATEGORIES}
    per_symbol = {c: {} for c in CATEGORIES}
    for line in report.stdout.splitlines():
        fields = line.split("\t")
        if line.startswith("#") or len(fields) < 3 or not fields[0].strip().isdigit():
            continue
        count, dso, symbol = int(fields[0]), fields[1].strip(), fields[2].strip()
        category = relpos_category(dso, symbol)
        samples[category] += count
        name = "[JIT] (oneDNN's kernels)" if dso.startswith("[JIT]") else symbol[4:120]
        per_symbol[category][name] = per_symbol[category].get(name, 0) + count
    steps_run = args.steps + args.warmup
    seconds = {c: samples[c] / args.frequency / steps_run for c in ("gemm", "attention")}
    seconds["other"] = run["median_step_cpu_s"] - seconds["gemm"] - seconds["attention"]
    per_step = args.frequency * steps_run / 1e3  # samples per ms of one step
    return {
        "framework": "relpos", "scheme": scheme, "len": length, "batch": run["batch"],
        "attention_kernel": run.get("attention"), "steps": args.steps, "warmup": args.warmup,
        "step_wall_s": run["median_step_s"], "step_s": run["median_step_cpu_s"],
        "samples": samples, "frequency": args.frequency,
        "sampled_s": sum(samples.values()) / args.frequency, "seconds": seconds,
        "top_ms": {c: {k: round(v / per_step, 3) for k, v in sorted(
            per_symbol[c].items(), key=lambda item: -item[1])[:8]} for c in CATEGORIES},
    }


def bounds(torch_runs, relpos, gemm_ratio):
    """Upper bounds on relpos/PyTorch (tokens/s) against PyTorch's fastest mode."""
    fastest = min(torch_runs, key=lambda run: run["step_s"])
    t_torch = fastest["step_s"]
    gemm, attention = relpos["seconds"]["gemm"], relpos["seconds"]["attention"]
    torch_gemm = fastest["seconds"]["gemm"] * fastest["step_s"] / fastest["profiled_step_s"]
    result = {"torch_mode": fastest["mode"], "torch_step_s": t_torch,
              "ratio_now": t_torch / relpos["step_s"],
              "ratio_now_wall": fastest["step_wall_s"] / relpos["step_wall_s"]}
    for label, g in (("", gemm), ("_torch_rate", gemm * gemm_ratio),
                     ("_torch_gemm", torch_gemm)):
        result["gemm_only" + label] = t_torch / g
        result["gemm_attention" + label] = t_torch / (g + attention)
    # What a step at 2.0x may spend beside GEMMs at torch.matmul's rate (negative: nothing).
    result["budget_attention_other_s"] = t_torch / TARGET_RATIO - gemm * gemm_ratio
    result["budget_other_s"] = result["budget_attention_other_s"] - attention
    return result


def shares(seconds):
    total = sum(seconds.values())
    return " / ".join(f"{100 * seconds[c] / total:.0f}" for c in CATEGORIES)


def print_tables(results, gemm_ratio):
    print("\nStep time (CPU s, wall s) and shares gemm / attention / other (%), one thread, "
          "bf16:\n")
    print("| scheme | L | program | step CPU s | step wall s | gemm ms | attention ms | other ms "
          "| shares |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---|")
    for case in results:
        for run in case["torch"] + [case["relpos"]]:
            name = f"PyTorch {run['mode']}" if run["framework"] == "torch" else "relpos bf16"
            s = run["seconds"]
            print(f"| {case['scheme']} | {case['len']} | {name} | {run['step_s']:.3f} | "
                  f"{run['step_wall_s']:.3f} | {1e3 * s['gemm']:.0f} | "
                  f"{1e3 * s['attention']:.0f} | "
                  f"{1e3 * s['other']:.0f} | {shares(s)} |")
    print(f"\nBounds on relpos / PyTorch's fastest mode (target {TARGET_RATIO}); torch rate: "
          f"relpos's GEMM time × {gemm_ratio}; torch GEMM: PyTorch's own in-step GEMM time:\n")
    print("| scheme | L | fastest PyTorch | now | GEMM only | GEMM + attention | "
          "GEMM only, torch rate | GEMM + attention, torch rate | GEMM only, torch GEMM | "
          "GEMM + attention, torch GEMM |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    keys = ("ratio_now", "gemm_only", "gemm_attention", "gemm_only_torch_rate",
            "gemm_attention_torch_rate", "gemm_only_torch_gemm", "gemm_attention_torch_gemm")
    for case in results:
        b = case["bounds"]
        print(f"| {case['scheme']} | {case['len']} | {b['torch_mode']} | "
              + " | ".join(f"{b[k]:.2f}" for k in keys) + " |")
    print(f"\nWhat a relpos step at {TARGET_RATIO}× may spend beside its GEMMs at torch.matmul's "
          "rate, against what it spends now (ms):\n")
    print("| scheme | L | PyTorch step / 2 | GEMM at torch rate | budget: attention + other | "
          "attention + other now | budget: other | other now |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for case in results:
        b, s = case["bounds"], case["relpos"]["seconds"]
        print(f"| {case['scheme']} | {case['len']} | {1e3 * b['torch_step_s'] / TARGET_RATIO:.0f} "
              f"| {1e3 * s['gemm'] * gemm_ratio:.0f} | {1e3 * b['budget_attention_other_s']:.0f} "
              f"| {1e3 * (s['attention'] + s['other']):.0f} | {1e3 * b['budget_other_s']:.0f} "
              f"| {1e3 * s['other']:.0f} |")


def print_medians(results):
    """Where a (scheme, L) was run more than once: each bound's median over the runs and its
    range, and relpos's and PyTorch's in-step GEMM time (the same products at every scheme
    and L but XL's W_r R), to show the run-to-run spread."""
    runs = {}
    for case in results:
        runs.setdefault((case["scheme"], case["len"]), []).append(case)
    if all(len(cases) == 1 for cases in runs.values()):
        return
    keys = ("ratio_now", "gemm_only", "gemm_attention", "gemm_only_torch_rate",
            "gemm_attention_torch_rate", "gemm_only_torch_gemm", "gemm_attention_torch_gemm")
    print("\nMedian over the runs of each (scheme, L) [lowest, highest]:\n")
    print("| scheme | L | runs | " + " | ".join(keys) + " |")
    print("|---|---:|---:|" + "---:|" * len(keys))
    for (scheme, length), cases in runs.items():
        cells = []
        for key in keys:
            values = [case["bounds"][key] for case in cases]
            cells.append(f"{statistics.median(values):.2f} "
                         f"[{min(values):.2f}, {max(values):.2f}]")
        print(f"| {scheme} | {length} | {len(cases)} | " + " | ".join(cells) + " |")
    print(f"\nMedian over the runs, ms: what a relpos step at {TARGET_RATIO}× may spend beside "
          "its GEMMs at torch.matmul's rate, against relpos's attention and other now:\n")
    print("| scheme | L | runs | budget: attention + other | attention + other now | "
          "cut needed | relpos attention now |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (scheme, length), cases in runs.items():
        budget = statistics.median(c["bounds"]["budget_attention_other_s"] for c in cases)
        now = statistics.median(c["relpos"]["seconds"]["attention"]
                                + c["relpos"]["seconds"]["other"] for c in cases)
        attention = statistics.median(c["relpos"]["seconds"]["attention"] for c in cases)
        cut = f"{100 * (1 - budget / now):.0f}%" if budget < now else "none"
        print(f"| {scheme} | {length} | {len(cases)} | {1e3 * budget:.0f} | {1e3 * now:.0f} | "
              f"{cut} | {1e3 * attention:.0f} |")
    relpos = [1e3 * case["relpos"]["seconds"]["gemm"] for case in results]
    fastest = [1e3 * run["seconds"]["gemm"] * run["step_s"] / run["profiled_step_s"]
               for case in results for run in case["torch"]]
    print(f"\nIn-step GEMM time over all {len(results)} runs, ms: relpos median "
          f"{statistics.median(relpos):.0f} [{min(relpos):.0f}, {max(relpos):.0f}]; PyTorch "
          f"(every mode) median {statistics.median(fastest):.0f} [{min(fastest):.0f}, "
          f"{max(fastest):.0f}]")


def parse_cases(text, parser):
    cases = []
    for item in text.split(","):
        scheme, _, length = item.partition(":")
        if not length.isdigit() or int(length) < 2 or int(length) == 256:
            parser.error(f"--cases: '{item}' is not SCHEME:L with L >= 2 and L != 256 (d_model)")
        cases.append((scheme, int(length)))
    return cases


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=DEFAULT_CASES, help="SCHEME:L,...")
    parser.add_argument("--modes", default="bf16,compile-bf16", help="PyTorch modes")
    parser.add_argument("--steps", type=int, default=3, help="timed (and profiled) steps")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--frequency", type=int, default=499, help="perf samples per second")
    parser.add_argument("--gemm-ratio", type=float, default=0.7,
                        help="relpos's raw bf16 GEMM rate / torch.matmul's (gemm_in_torch.py)")
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--python", default="/work/venv-torch/bin/python")
    parser.add_argument("--json", help="write every run and bound here")
    parser.add_argument("--from-json", nargs="+", metavar="FILE",
                        help="run nothing: print the tables of earlier --json files, in order")
    parser.add_argument("--torch-profile", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--scheme", help=argparse.SUPPRESS)
    parser.add_argument("--len", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.steps < 1 or args.warmup < 1 or args.frequency < 1 or not 0 < args.gemm_ratio:
        parser.error("need --steps >= 1, --warmup >= 1 (compilation), --frequency >= 1, "
                     "--gemm-ratio > 0")
    if args.torch_profile:
        profile_torch(args)
        return
    if args.from_json:
        saved = []
        for name in args.from_json:
            with open(name) as f:
                saved.append(json.load(f))
        if len({run["gemm_ratio"] for run in saved}) != 1:
            parser.error("--from-json: the files were written with different --gemm-ratio")
        cases = [case for run in saved for case in run["cases"]]
        print_tables(cases, saved[0]["gemm_ratio"])
        print_medians(cases)
        return
    cases, modes = parse_cases(args.cases, parser), args.modes.split(",")
    binary = os.path.join(args.build_dir, "bench", "bench_train")
    if not os.access(binary, os.X_OK):
        parser.error(f"--build-dir: {binary} is not an executable (cmake --build "
                     f"{args.build_dir} --target bench_train)")
    if shutil.which("perf") is None:
        parser.error("perf is not on PATH (Debian: linux-perf)")
    if not os.access(args.python, os.X_OK):
        parser.error(f"--python: {args.python} is not an executable")
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        for scheme, length in cases:
            print(f"step_shares: {scheme} L={length}", file=sys.stderr, flush=True)
            torch_runs = [run_torch(args, scheme, length, mode) for mode in modes]
            relpos = run_relpos(args, scheme, length, scratch)
            results.append({"scheme": scheme, "len": length, "torch": torch_runs,
                            "relpos": relpos, "bounds": bounds(torch_runs, relpos,
                                                               args.gemm_ratio)})
    print_tables(results, args.gemm_ratio)
    if args.json:
        partial = args.json + ".tmp"
        with open(partial, "w") as f:
            json.dump({"gemm_ratio": args.gemm_ratio, "cases": results}, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(partial, args.json)


if __name__ == "__main__":
    main()
