#!/usr/bin/python3
"""CPU training throughput of relpos against PyTorch 2.x, measured in one run.

For each (scheme, L) and round it runs bench_train (relpos) once per precision
(--relpos-precisions) and bench/train_torch.py once per PyTorch mode
(--torch-modes: fp32 eager, bf16 autocast, torch.compile in fp32 and under bf16
autocast) in the PyTorch 2.x
virtual environment (tools/torch-venv.sh, or --python), and optionally Debian's
older PyTorch in fp32 eager (--old-python). Every run is a fresh process with the
same thread count. At the start and at the end it measures the raw GEMM rates of
the model's shapes: cblas_sgemm and relpos's own matmul in fp32 and bf16
(bench_train --gemm) and torch.matmul in fp32 and bf16 (bench/gemm_torch.py). Writes a markdown report (a check of the
issue's targets, tables per L, the raw JSON lines) through a temporary file and
a rename. Standard library only.
"""
import argparse
import datetime
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALL_SCHEMES = ("none", "sinusoidal", "learned", "t5", "shaw", "xl", "alibi", "rope", "kerple")
RELPOS_PRECISIONS = ("fp32", "bf16")
TORCH_MODES = ("eager", "bf16", "compile", "compile-bf16")
LABELS = {"relpos-fp32": "relpos fp32", "relpos-bf16": "relpos bf16",
          "torch-eager": "PyTorch fp32 eager", "torch-bf16": "PyTorch bf16 autocast",
          "torch-compile": "PyTorch fp32 torch.compile",
          "torch-compile-bf16": "PyTorch bf16 autocast torch.compile", "old-eager": "old PyTorch fp32 eager"}
PROBES = ("sgemm", "gemm-fp32", "gemm-bf16", "matmul-fp32", "matmul-bf16")
PROBE_LABELS = {"sgemm": "cblas_sgemm (OpenBLAS)",
                "gemm-fp32": "relpos matmul fp32 (its backend's choice: oneDNN where built)",
                "gemm-bf16": "relpos matmul bf16 (rounding the f32 operands included)",
                "matmul-fp32": "torch.matmul fp32", "matmul-bf16": "torch.matmul bf16 (oneDNN)"}
SPEEDUP_TARGET, BF16_SPEEDUP_LENGTHS, FP32_SPEEDUP_LENGTHS = 2.0, (128, 512, 1024), (128,)
BF16_RATE_TARGET, BF16_RATE_LENGTH = 0.50, 128
OVERHEAD_TARGET, OVERHEAD_LENGTH = 1.10, 1024
RSS_TARGET, RSS_LONG, RSS_SHORT = 1.3, 4096, 512
FP32_RATE_TARGET, FP32_RATE_LENGTH = 0.55, 512


def int_list(text):
    return [int(x) for x in text.split(",") if x]


def name_list(text, allowed):
    names = [x for x in text.split(",") if x]
    unknown = [x for x in names if x not in allowed]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown {','.join(unknown)} (expected some of {','.join(allowed)})")
    return names


def default_python():
    venv = os.environ.get("RELPOS_TORCH_VENV") or os.path.join(ROOT, ".venv-torch")
    return os.path.join(venv, "bin", "python")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--schemes", default=",".join(ALL_SCHEMES),
                   type=lambda t: name_list(t, ALL_SCHEMES), help="comma-separated")
    p.add_argument("--lengths", type=int_list, default=[128, 512, 1024])
    p.add_argument("--relpos-precisions", default=["fp32"],
                   type=lambda t: name_list(t, RELPOS_PRECISIONS),
                   help="comma-separated, of fp32,bf16 (bf16 adds --set train.precision=bf16)")
    p.add_argument("--torch-modes", default=list(TORCH_MODES),
                   type=lambda t: name_list(t, TORCH_MODES),
                   help="comma-separated, of eager,bf16,compile,compile-bf16")
    p.add_argument("--python", default=default_python(),
                   help="the PyTorch 2.x interpreter (default: $RELPOS_TORCH_VENV/bin/python, "
                        "else .venv-torch/bin/python; tools/torch-venv.sh makes it)")
    p.add_argument("--old-python", default="",
                   help="also run this interpreter's PyTorch in fp32 eager, e.g. /usr/bin/python3 "
                        "(Debian's 1.13); default: not run")
    p.add_argument("--rounds", type=int, default=3, help="runs of every program per (scheme, L)")
    p.add_argument("--steps", type=int, default=8, help="timed steps per run")
    p.add_argument("--warmup", type=int, default=2,
                   help="untimed steps per run (torch.compile compiles in the first)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build-bench"))
    p.add_argument("--attention", default="", help="bench_train --attention (default: its own)")
    p.add_argument("--mem-limit-gib", type=float, default=None,
                   help="address-space limit per run, so that a run that would exhaust the "
                        "machine fails alone; default 75%% of RAM; 0: none")
    p.add_argument("--run-timeout-s", type=float, default=3600,
                   help="a run that takes longer is stopped and reported as failed")
    p.add_argument("--note", default="", help="a line for the report's header")
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "cpu.md"))
    args = p.parse_args()
    if not args.relpos_precisions or not args.torch_modes or not args.schemes:
        p.error("need at least one scheme, relpos precision and PyTorch mode")
    if args.rounds < 1 or args.steps < 1 or args.warmup < 0 or args.threads < 1:
        p.error("need --rounds >= 1, --steps >= 1, --warmup >= 0, --threads >= 1")
    if any(m.startswith("compile") for m in args.torch_modes) and args.warmup < 1:
        p.error("--warmup: torch.compile needs at least 1 warm-up step (it compiles there)")
    if not args.lengths or min(args.lengths) < 2:
        p.error(f"--lengths: need lengths >= 2, got {args.lengths}")
    if args.mem_limit_gib is None:
        args.mem_limit_gib = 0.75 * memory_total_bytes() / 2**30
    return args


def memory_total_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return 0


def cpu_model():
    """The model name and which of the vector and matrix units that matter here it has."""
    name, flags = platform.processor() or "unknown CPU", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    units = [u for u in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if u in flags]
    return f"{name} ({', '.join(units) or 'none of avx2, avx512f, avx512_bf16, amx_bf16'})"


def git_revision():
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def die(message):
    """A user error: one line on stderr, exit status 2."""
    print(f"train_throughput: {message}", file=sys.stderr)
    sys.exit(2)


def torch_version(python, option):
    """The interpreter's torch version; exits with one line when it has none."""
    if not os.access(python, os.X_OK):
        die(f"{option} {python}: no such interpreter; make the PyTorch 2.x venv with "
            f"tools/torch-venv.sh or pass {option} PATH")
    probe = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        die(f"{option} {python}: cannot import torch "
            f"({(probe.stderr.strip().splitlines() or ['no output'])[-1]})")
    return probe.stdout.strip()


class Runner:
    """Runs the benchmark programs with one thread count and memory limit."""

    def __init__(self, args):
        self.binary = os.path.join(args.build_dir, "bench", "bench_train")
        if not os.access(self.binary, os.X_OK):
            die(f"{self.binary} not found; build it with "
                f"cmake --build {args.build_dir} -j2 --target bench_train")
        self.args = args
        self.revision = git_revision()  # at the start: the tree the programs were built from
        self.versions = {"torch": torch_version(args.python, "--python")}
        if args.old_python:
            self.versions["old"] = torch_version(args.old_python, "--old-python")
        self.contenders = ([f"relpos-{p}" for p in args.relpos_precisions] +
                           [f"torch-{m}" for m in args.torch_modes] +
                           (["old-eager"] if args.old_python else []))
        # The bf16 rates are measured only for a run that has a bf16 contender.
        bf16 = any(c.endswith("bf16") for c in self.contenders)
        self.probes = [p for p in PROBES if bf16 or not p.endswith("bf16")]
        self.env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
        self.limit = int(args.mem_limit_gib * 2**30)

    def command(self, contender, scheme=None, length=None):
        a = self.args
        threads = ["--threads", str(a.threads)]
        if contender == "sgemm":
            return [self.binary, "--gemm", "sgemm"] + threads
        if contender in ("gemm-fp32", "gemm-bf16"):
            return [self.binary, "--gemm", contender.split("-")[1]] + threads
        if contender in ("matmul-fp32", "matmul-bf16"):
            return [a.python, os.path.join(ROOT, "bench", "gemm_torch.py"),
                    "--dtype", contender.split("-")[1]] + threads
        common = ["--scheme", scheme, "--len", str(length), "--steps", str(a.steps),
                  "--warmup", str(a.warmup)] + threads
        kind, variant = contender.split("-", 1)
        if kind == "relpos":
            return ([self.binary] + common +
                    (["--attention", a.attention] if a.attention else []) +
                    (["--set", "train.precision=bf16"] if variant == "bf16" else []))
        python = a.python if kind == "torch" else a.old_python
        return [python, os.path.join(ROOT, "bench", "train_torch.py"), "--mode", variant] + common

    def _limit_memory(self):
        if self.limit > 0:
            resource.setrlimit(resource.RLIMIT_AS, (self.limit, self.limit))

    def run(self, contender, scheme=None, length=None):
        """The program's JSON line, or {"error": one line} when it fails."""
        cmd = self.command(contender, scheme, length)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=self.env,
                                  preexec_fn=self._limit_memory, timeout=self.args.run_timeout_s)
        except subprocess.TimeoutExpired:
            return {"error": f"stopped after --run-timeout-s={self.args.run_timeout_s:g} s"}
        lines = proc.stdout.strip().splitlines()
        if proc.returncode == 0 and lines:
            try:
                return json.loads(lines[-1])
            except json.JSONDecodeError:
                pass
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        if "MemoryError" in proc.stderr or "bad_alloc" in proc.stderr:
            tail = f"out of memory under the {self.args.mem_limit_gib:.1f} GiB limit ({tail})"
        if proc.returncode < 0:
            return {"error": f"killed by signal {-proc.returncode}: {tail}"}
        return {"error": f"exit {proc.returncode}: {tail}"}


def fmt(value, spec=",.0f", missing="—"):
    """value formatted by spec (a trailing "×" is appended), or `missing` when None."""
    if value is None:
        return missing
    return format(value, spec[:-1]) + "×" if spec.endswith("×") else format(value, spec)


class Report:
    def __init__(self, args, runner, results, probes, started, load_start):
        self.args, self.runner, self.results, self.probes = args, runner, results, probes
        self.started, self.load_start = started, load_start
        self.contenders = runner.contenders
        self.relpos = [c for c in self.contenders if c.startswith("relpos-")]
        self.peers = [c for c in self.contenders if not c.startswith("relpos-")]

    # ---- figures ----

    def runs(self, contender, scheme, length):
        return [r[contender] for r in self.results.get((scheme, length), []) if contender in r]

    def value(self, contender, scheme, length, key):
        """Median over rounds of one field, or None when no run of it succeeded."""
        values = [r[key] for r in self.runs(contender, scheme, length)
                  if "error" not in r and key in r]
        return statistics.median(values) if values else None

    def ratios(self, a, b, scheme, length, key="tokens_per_s"):
        """a[key] / b[key] of each round where both ran."""
        return [r[a][key] / r[b][key] for r in self.results.get((scheme, length), [])
                if "error" not in r.get(a, {"error": 1}) and "error" not in r.get(b, {"error": 1})]

    def best_ratios(self, a, peers, scheme, length):
        """a's tokens/s over the fastest of `peers` in each round where a and one peer ran."""
        out = []
        for r in self.results.get((scheme, length), []):
            rates = [r[p]["tokens_per_s"] for p in peers if "error" not in r.get(p, {"error": 1})]
            if rates and "error" not in r.get(a, {"error": 1}):
                out.append(r[a]["tokens_per_s"] / max(rates))
        return out

    def ratio(self, a, b, scheme, length):
        """Median of the per-round tokens/s ratios a / b (the runs of one round ran close
        together, so their ratio is the figure the load disturbs least)."""
        r = self.ratios(a, b, scheme, length)
        return statistics.median(r) if r else None

    def probe_rate(self, probe):
        """The higher combined rate of the probe's start and end runs."""
        rates = [p[probe]["gflops"] for p in self.probes if "error" not in p.get(probe, {"error": 1})]
        return max(rates) if rates else None

    def failures(self, contender, scheme, length):
        errors = [r["error"] for r in self.runs(contender, scheme, length) if "error" in r]
        return errors[0] if errors else None

    def cell(self, contender, scheme, length, key, spec):
        v = self.value(contender, scheme, length, key)
        if v is None and self.failures(contender, scheme, length):
            return "failed"
        return fmt(v, spec)

    def step_overhead(self, contender, scheme, length):
        none = self.value(contender, "none", length, "median_step_s")
        mine = self.value(contender, scheme, length, "median_step_s")
        return mine / none if none and mine else None

    # ---- text ----

    def header(self):
        a, r = self.args, self.runner
        commands = [f"  - {LABELS[c]}: `OMP_NUM_THREADS={a.threads} "
                    f"{' '.join(shlex.quote(x) for x in r.command(c, 'SCHEME', 'L'))}`"
                    for c in self.contenders]
        probe_lines = []
        for probe in r.probes:
            probe_lines.append(f"  - {PROBE_LABELS[probe]}: `{' '.join(r.command(probe))}`")
            for when, p in zip(("start", "end"), self.probes):
                s = p.get(probe)
                if s is None:
                    continue
                if "error" in s:
                    probe_lines.append(f"    - {when}: failed ({s['error']})")
                    continue
                shapes = ", ".join(f"{x['m']}×{x['k']}·{x['k']}×{x['n']} {x['gflops']:.1f}"
                                   for x in s["shapes"])
                probe_lines.append(f"    - {when}: {s['gflops']:.1f} GFLOP/s ({shapes}); from the "
                                   f"fastest calls: {s.get('best_gflops', 0):.1f}")
        versions = f"PyTorch {r.versions['torch']} (`{a.python}`)"
        if "old" in r.versions:
            versions += f"; old PyTorch {r.versions['old']} (`{a.old_python}`)"
        return [
            "# CPU training throughput: relpos against PyTorch 2.x",
            "",
            "Written by `bench/train_throughput.py` (bench/README.md explains how each figure is "
            "taken). Ratios come from runs of the same invocation; absolute figures depend on the "
            "machine's load.",
            "",
            *([f"- note: {a.note}"] if a.note else []),
            f"- date: {self.started:%Y-%m-%d %H:%M} UTC, {self.duration_minutes():.0f} min",
            f"- machine: {cpu_model()}, {os.cpu_count()} logical CPUs, "
            f"{memory_total_bytes() / 2**30:.1f} GiB RAM; {platform.platform()}",
            f"- load average (1 min): {self.load_start:.2f} at the start, "
            f"{os.getloadavg()[0]:.2f} at the end",
            f"- relpos: git {r.revision}; {versions}",
            f"- driver: `/usr/bin/python3 bench/train_throughput.py {' '.join(sys.argv[1:])}`",
            f"- rounds per (scheme, L): {a.rounds}, each running, in this order:",
            *commands,
            f"- per run: {a.warmup} warm-up and {a.steps} timed steps (median step time); 8192 "
            f"tokens per step (batch = 8192 / L); address-space limit {a.mem_limit_gib:.1f} GiB "
            f"per run",
            "- raw GEMM rates of the model's forward shapes, at the start and at the end "
            "(the higher of the two is the reference):",
            *probe_lines,
            "",
        ]

    def duration_minutes(self):
        return (datetime.datetime.now(datetime.timezone.utc) - self.started).total_seconds() / 60

    def length_table(self, length, columns):
        """columns: (heading, cell(scheme) -> text)."""
        out = ["| scheme | " + " | ".join(h for h, _ in columns) + " |",
               "|---|" + "---:|" * len(columns)]
        for s in self.args.schemes:
            out.append(f"| {s} | " + " | ".join(cell(s) for _, cell in columns) + " |")
        return out + [""]

    def ratio_text(self, a, b, scheme, length):
        r = self.ratios(a, b, scheme, length)
        if not r:
            return "—"
        spread = f" ({min(r):.2f}–{max(r):.2f})" if len(r) > 1 else ""
        return f"{statistics.median(r):.2f}×{spread}"

    def percent_of(self, contender, probe, scheme, length):
        g, rate = self.value(contender, scheme, length, "model_gflops"), self.probe_rate(probe)
        return 100.0 * g / rate if g is not None and rate else None

    @staticmethod
    def reference_probe(contender):
        return "matmul-bf16" if contender == "relpos-bf16" else "gemm-fp32"

    def tables(self):
        out = ["## Results", ""]
        for n in self.args.lengths:
            out += [f"### L = {n}", "", "Tokens/s (median of rounds):", ""]
            out += self.length_table(n, [(LABELS[c], lambda s, c=c: self.cell(
                c, s, n, "tokens_per_s", ",.0f")) for c in self.contenders])
            out += ["Speed ratios, relpos / peer (median of the per-round ratios; their range "
                    "over rounds in brackets):", ""]
            out += self.length_table(n, [(f"{LABELS[a]} / {LABELS[b]}",
                                          lambda s, a=a, b=b: self.ratio_text(a, b, s, n))
                                         for a in self.relpos for b in self.peers])
            out += ["Peak memory, MiB: relpos's tensors (its allocator's peak) and every "
                    "program's peak RSS (PyTorch's includes the interpreter and its libraries):", ""]
            out += self.length_table(
                n, [(f"{LABELS[c]} tensors", lambda s, c=c: self.cell(
                    c, s, n, "peak_tensor_mib", ",.0f")) for c in self.relpos] +
                   [(f"{LABELS[c]} RSS", lambda s, c=c: self.cell(c, s, n, "peak_rss_mib", ",.0f"))
                    for c in self.contenders])
            out += ["Model GFLOP/s (relpos: % of the raw rate in its precision, fp32: "
                    "relpos matmul fp32, bf16: torch.matmul bf16):", ""]

            def gflops(c, s):
                g = self.cell(c, s, n, "model_gflops", ".1f")
                if not c.startswith("relpos-"):
                    return g
                return f"{g} ({fmt(self.percent_of(c, self.reference_probe(c), s, n), '.0f')}%)"
            out += self.length_table(n, [(LABELS[c], lambda s, c=c: gflops(c, s))
                                         for c in self.contenders])
            compiled = [c for c in self.contenders if c.startswith("torch-compile")]
            if compiled:
                out += ["torch.compile: compile time (warm-up time beyond that many steady "
                        "steps), seconds:", ""]
                out += self.length_table(n, [(LABELS[c], lambda s, c=c: self.cell(
                    c, s, n, "compile_s", ".1f")) for c in compiled])
        return out

    def checks(self):
        out = ["## Same model everywhere: parameters and losses", "",
               "| scheme | L | program | parameters | first loss | final loss |",
               "|---|---:|---|---:|---:|---:|"]
        for s in self.args.schemes:
            for n in self.args.lengths:
                for c in self.contenders:
                    out.append(f"| {s} | {n} | {LABELS[c]} | "
                               f"{self.cell(c, s, n, 'parameters', ',.0f')} | "
                               f"{self.cell(c, s, n, 'first_loss', '.3f')} | "
                               f"{self.cell(c, s, n, 'final_loss', '.3f')} |")
        failed = [f"- {LABELS[c]} {s} L={n}: {self.failures(c, s, n)}" for s in self.args.schemes
                  for n in self.args.lengths for c in self.contenders if self.failures(c, s, n)]
        if failed:
            out += ["", "### Failed runs (first error of each)", "", *failed]
        return out + [""]

    @staticmethod
    def target(title, rows):
        """rows: (label, figures, passed, or None when not measured)."""
        measured = [ok for _, _, ok in rows if ok is not None]
        if measured:
            unmeasured = len(rows) - len(measured)
            verdict = (f"**{'PASS' if all(measured) else 'MISS'}** ({sum(measured)} of "
                       f"{len(measured)} met" +
                       (f", {unmeasured} not measured)" if unmeasured else ")"))
        else:
            verdict = "not measured in this run"
        out = [f"- {title}: {verdict}"]
        for label, text, ok in rows:
            mark = "n/a" if ok is None else ("PASS" if ok else "MISS")
            out.append(f"  - {mark} {label}: {text}")
        return out

    def judged(self, label, text, value, passes, needed):
        """A target row: passed, or None when not measured. A relpos run that failed in one
        of the (contender, scheme, L) runs the figure needs is a miss."""
        if value is not None:
            return label, text, passes(value)
        failed = [f"{LABELS[c]} {s} L={n} failed: {self.failures(c, s, n)}"
                  for c, s, n in needed if c.startswith("relpos-") and
                  self.value(c, s, n, "tokens_per_s") is None and self.failures(c, s, n)]
        if failed:
            return label, f"{text}; {'; '.join(failed)}", False
        return label, text, None

    def lengths_in(self, wanted):
        return [n for n in wanted if n in self.args.lengths]

    def speed_rows(self, mine, peers, lengths):
        """mine's tokens/s over the fastest of `peers` (median of the per-round ratios)."""
        peers = [p for p in peers if p in self.contenders]
        if mine not in self.contenders or not peers:
            return []
        rows = []
        for n in self.lengths_in(lengths):
            for s in self.args.schemes:
                ratios = self.best_ratios(mine, peers, s, n)
                r = statistics.median(ratios) if ratios else None
                text = f"{fmt(r, '.3f×')} (target ≥ {SPEEDUP_TARGET}×)"
                rows.append(self.judged(f"{s} L={n}", text, r, lambda v: v >= SPEEDUP_TARGET,
                                        [(mine, s, n)] + [(p, s, n) for p in peers]))
        return rows

    def rate_rows(self, mine, probe, length, target):
        """mine's model GFLOP/s at `length` as a share of the probe's raw GEMM rate."""
        if mine not in self.contenders or length not in self.args.lengths:
            return []
        rate = self.probe_rate(probe)
        rows = []
        for s in self.args.schemes:
            pct = self.percent_of(mine, probe, s, length)
            g = self.value(mine, s, length, "model_gflops")
            rows.append(self.judged(
                f"{s} L={length}",
                f"{fmt(g, '.1f')} GFLOP/s = {fmt(pct, '.0f')}% of {fmt(rate, '.1f')} "
                f"(target ≥ {target:.0%})",
                pct, lambda v: v >= 100 * target, [(mine, s, length)]))
        return rows

    def memory_rows(self):
        if "relpos-bf16" not in self.contenders or "relpos-fp32" not in self.contenders:
            return []
        rows = []
        for n in self.args.lengths:
            for s in self.args.schemes:
                figures = {(c, k): self.value(c, s, n, k) for c in ("relpos-bf16", "relpos-fp32")
                           for k in ("peak_tensor_mib", "peak_rss_mib")}
                complete = all(v is not None for v in figures.values())
                ok = complete and all(figures["relpos-bf16", k] <= figures["relpos-fp32", k]
                                      for k in ("peak_tensor_mib", "peak_rss_mib"))
                text = (f"tensors {fmt(figures['relpos-bf16', 'peak_tensor_mib'], ',.0f')} / "
                        f"{fmt(figures['relpos-fp32', 'peak_tensor_mib'], ',.0f')} MiB, RSS "
                        f"{fmt(figures['relpos-bf16', 'peak_rss_mib'], ',.0f')} / "
                        f"{fmt(figures['relpos-fp32', 'peak_rss_mib'], ',.0f')} MiB (bf16 / fp32; "
                        f"target: bf16 ≤ fp32 in both)")
                rows.append(self.judged(f"{s} L={n}", text, ok if complete else None,
                                        lambda v: v, [("relpos-bf16", s, n),
                                                      ("relpos-fp32", s, n)]))
        return rows

    def overhead_rows(self):
        if OVERHEAD_LENGTH not in self.args.lengths or "none" not in self.args.schemes:
            return []
        rows = []
        for c in self.relpos:
            for s in self.args.schemes:
                o = self.step_overhead(c, s, OVERHEAD_LENGTH)
                rows.append(self.judged(
                    f"{LABELS[c]} {s}",
                    f"{fmt(o, '.3f')}× the `none` step time (target ≤ {OVERHEAD_TARGET}×)", o,
                    lambda v: v <= OVERHEAD_TARGET,
                    [(c, s, OVERHEAD_LENGTH), (c, "none", OVERHEAD_LENGTH)]))
        return rows

    def rss_rows(self):
        if RSS_LONG not in self.args.lengths or RSS_SHORT not in self.args.lengths:
            return []
        rows = []
        for c in self.relpos:
            for s in self.args.schemes:
                long = self.value(c, s, RSS_LONG, "peak_rss_mib")
                short = self.value(c, s, RSS_SHORT, "peak_rss_mib")
                q = long / short if long and short else None
                rows.append(self.judged(
                    f"{LABELS[c]} {s}",
                    f"{fmt(long, ',.0f')} MiB at L={RSS_LONG} / {fmt(short, ',.0f')} MiB at "
                    f"L={RSS_SHORT} = {fmt(q, '.3f')}× (target ≤ {RSS_TARGET}×)",
                    q, lambda v: v <= RSS_TARGET, [(c, s, RSS_LONG), (c, s, RSS_SHORT)]))
        return rows

    def targets(self):
        bf16_lengths = ", ".join(str(n) for n in BF16_SPEEDUP_LENGTHS)
        return ["## Targets", "",
                *self.target(f"relpos bf16 ≥ {SPEEDUP_TARGET}× PyTorch's fastest mode run "
                             f"(of {', '.join(self.peers)}) tokens/s at L = {bf16_lengths}",
                             self.speed_rows("relpos-bf16", [c for c in self.peers
                                                             if c.startswith("torch-")],
                                             BF16_SPEEDUP_LENGTHS)),
                *self.target(f"relpos bf16 model GFLOP/s at L = {BF16_RATE_LENGTH} ≥ "
                             f"{BF16_RATE_TARGET:.0%} of raw torch.matmul bf16",
                             self.rate_rows("relpos-bf16", "matmul-bf16", BF16_RATE_LENGTH,
                                            BF16_RATE_TARGET)),
                *self.target(f"relpos fp32 ≥ {SPEEDUP_TARGET}× PyTorch fp32 eager tokens/s at "
                             f"L = {FP32_SPEEDUP_LENGTHS[0]}",
                             self.speed_rows("relpos-fp32", ["torch-eager"], FP32_SPEEDUP_LENGTHS)),
                *self.target("relpos peak memory in bf16 ≤ in fp32 at every L",
                             self.memory_rows()),
                *self.target(f"every scheme's relpos step time ≤ {OVERHEAD_TARGET}× `none` at "
                             f"L = {OVERHEAD_LENGTH}", self.overhead_rows()),
                *self.target(f"relpos peak RSS at L = {RSS_LONG} ≤ {RSS_TARGET}× at "
                             f"L = {RSS_SHORT}", self.rss_rows()),
                *self.target(f"relpos fp32 model GFLOP/s at L = {FP32_RATE_LENGTH} ≥ "
                             f"{FP32_RATE_TARGET:.0%} of relpos's raw fp32 matmul rate",
                             self.rate_rows("relpos-fp32", "gemm-fp32", FP32_RATE_LENGTH,
                                            FP32_RATE_TARGET)),
                ""]

    def raw(self):
        lines = [json.dumps({"when": w, "probe": name, **result})
                 for w, p in zip(("start", "end"), self.probes) for name, result in p.items()]
        for (s, n), rounds in self.results.items():
            for i, r in enumerate(rounds):
                for c, result in r.items():
                    lines.append(json.dumps({"round": i + 1, "program": c, "scheme": s, "len": n,
                                             **result}))
        return ["## Raw runs", "", "```jsonl", *lines, "```", ""]

    def text(self):
        return "\n".join(self.header() + self.targets() + self.tables() + self.checks() +
                         self.raw())


def write_atomically(path, text):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    temporary = f"{path}.tmp.{os.getpid()}"
    try:
        with open(temporary, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def summarise(contender, result):
    if "error" in result:
        return f"failed: {result['error']}"
    if contender in PROBES:
        return f"{result['gflops']:.1f} GFLOP/s"
    text = (f"{result['tokens_per_s']:,.0f} tokens/s, {result['peak_rss_mib']:,.0f} MiB, "
            f"loss {result['first_loss']:.3f} -> {result['final_loss']:.3f}")
    return text + (f", compiled in {result['compile_s']:.0f} s" if result.get("compile_s") else "")


def main():
    args = parse_args()
    runner = Runner(args)
    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = os.getloadavg()[0]
    total = (len(args.schemes) * len(args.lengths) * args.rounds * len(runner.contenders) +
             2 * len(runner.probes))
    done = 0

    def measure(contender, scheme=None, length=None, label=""):
        nonlocal done
        result = runner.run(contender, scheme, length)
        done += 1
        print(f"[{done}/{total}] {contender} {label}: {summarise(contender, result)}",
              file=sys.stderr, flush=True)
        return result

    probes = [{p: measure(p, label="start") for p in runner.probes}]
    results = {}
    for length in args.lengths:
        for scheme in args.schemes:
            rounds = results.setdefault((scheme, length), [])
            for r in range(args.rounds):
                label = f"{scheme} L={length} round {r + 1}"
                rounds.append({c: measure(c, scheme, length, label) for c in runner.contenders})
    probes.append({p: measure(p, label="end") for p in runner.probes})

    report = Report(args, runner, results, probes, started, load_start)
    write_atomically(args.out, report.text())
    print("\n".join(report.targets()))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
