#!/usr/bin/python3
"""CPU training throughput of relpos against PyTorch, measured in one run.

For each (scheme, L) it runs bench_train (relpos) and bench/train_torch.py
(PyTorch) alternately, round by round, each run a fresh process with the same
thread count, and measures raw cblas_sgemm (bench_train --sgemm) at the start
and at the end. Writes a markdown report (tables per metric and a check of the
issue's targets) through a temporary file and a rename. Standard library only.
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
ALL_SCHEMES = ("none", "sinusoidal", "learned", "t5", "shaw", "xl", "alibi", "rope")
FRAMEWORKS = ("relpos", "torch")
SPEEDUP_TARGET, SPEEDUP_LENGTHS = 2.0, (128, 512, 1024)
OVERHEAD_TARGET, OVERHEAD_LENGTH = 1.10, 1024
RSS_TARGET, RSS_LONG, RSS_SHORT = 1.3, 4096, 512
SGEMM_TARGET, SGEMM_LENGTH = 0.55, 512


def int_list(text):
    return [int(x) for x in text.split(",") if x]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--schemes", default=",".join(ALL_SCHEMES), help="comma-separated")
    p.add_argument("--lengths", type=int_list, default=[128, 512, 1024, 4096])
    p.add_argument("--rounds", type=int, default=3, help="relpos/PyTorch pairs per (scheme, L)")
    p.add_argument("--steps", type=int, default=8, help="timed steps per run")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps per run")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build-bench"))
    p.add_argument("--attention", default="", help="bench_train --attention (default: its own)")
    p.add_argument("--mem-limit-gib", type=float, default=None,
                   help="address-space limit per run, so that a run that would exhaust the "
                        "machine fails alone; default 75%% of RAM; 0: none")
    p.add_argument("--run-timeout-s", type=float, default=3600,
                   help="a run that takes longer is stopped and reported as failed")
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "cpu.md"))
    args = p.parse_args()
    args.schemes = [s for s in args.schemes.split(",") if s]
    unknown = [s for s in args.schemes if s not in ALL_SCHEMES]
    if unknown:
        p.error(f"--schemes: unknown {','.join(unknown)} "
                f"(expected some of {','.join(ALL_SCHEMES)})")
    if args.rounds < 1 or args.steps < 1 or args.warmup < 0 or args.threads < 1:
        p.error("need --rounds >= 1, --steps >= 1, --warmup >= 0, --threads >= 1")
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
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def git_revision():
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


class Runner:
    """Runs the benchmark programs with one thread count and memory limit."""

    def __init__(self, args):
        self.binary = os.path.join(args.build_dir, "bench", "bench_train")
        if not os.access(self.binary, os.X_OK):
            sys.exit(f"train_throughput: {self.binary} not found; build it with "
                     f"cmake --build {args.build_dir} -j2 --target bench_train")
        self.args = args
        self.env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
        self.limit = int(args.mem_limit_gib * 2**30)

    def command(self, framework, scheme=None, length=None):
        a = self.args
        if framework == "sgemm":
            return [self.binary, "--sgemm", "--threads", str(a.threads)]
        common = ["--scheme", scheme, "--len", str(length), "--steps", str(a.steps),
                  "--warmup", str(a.warmup), "--threads", str(a.threads)]
        if framework == "relpos":
            return [self.binary] + common + (["--attention", a.attention] if a.attention else [])
        return [sys.executable, os.path.join(ROOT, "bench", "train_torch.py")] + common

    def _limit_memory(self):
        if self.limit > 0:
            resource.setrlimit(resource.RLIMIT_AS, (self.limit, self.limit))

    def run(self, framework, scheme=None, length=None):
        """The program's JSON line, or {"error": one line} when it fails."""
        cmd = self.command(framework, scheme, length)
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


def median_of(runs, key):
    values = [r[key] for r in runs if "error" not in r]
    return statistics.median(values) if values else None


def per_round_ratio(pairs, key):
    """Median over rounds of relpos[key] / torch[key], rounds where both ran."""
    ratios = [a[key] / b[key] for a, b in pairs if "error" not in a and "error" not in b]
    return statistics.median(ratios) if ratios else None


def fmt(value, spec=",.0f", missing="—"):
    """value formatted by spec (a trailing "×" is appended), or `missing` when None."""
    if value is None:
        return missing
    return format(value, spec[:-1]) + "×" if spec.endswith("×") else format(value, spec)


class Report:
    def __init__(self, args, runner, results, sgemm, started, load_start):
        self.args, self.runner, self.results, self.sgemm = args, runner, results, sgemm
        self.started, self.load_start = started, load_start
        rates = [s["gflops"] for s in sgemm if "error" not in s]
        self.sgemm_rate = max(rates) if rates else None

    def runs(self, framework, scheme, length):
        return [pair[framework] for pair in self.results.get((scheme, length), [])]

    def value(self, framework, scheme, length, key):
        return median_of(self.runs(framework, scheme, length), key)

    def speed_ratio(self, scheme, length):
        pairs = [(p["relpos"], p["torch"]) for p in self.results.get((scheme, length), [])]
        return per_round_ratio(pairs, "tokens_per_s")

    def step_overhead(self, scheme, length):
        none = self.value("relpos", "none", length, "median_step_s")
        mine = self.value("relpos", scheme, length, "median_step_s")
        return mine / none if none and mine else None

    def table(self, title, cell):
        lengths = self.args.lengths
        out = [f"### {title}", "", "| scheme | " + " | ".join(f"L={n}" for n in lengths) + " |",
               "|---|" + "---:|" * len(lengths)]
        for s in self.args.schemes:
            out.append(f"| {s} | " + " | ".join(cell(s, n) for n in lengths) + " |")
        return out + [""]

    def failures(self, framework, scheme, length):
        errors = [r["error"] for r in self.runs(framework, scheme, length) if "error" in r]
        return errors[0] if errors else None

    def metric_cell(self, framework, key, spec):
        def cell(scheme, length):
            v = self.value(framework, scheme, length, key)
            if v is None and self.failures(framework, scheme, length):
                return "failed"
            return fmt(v, spec)
        return cell

    def header(self):
        a, r = self.args, self.runner
        example = {f: " ".join(shlex.quote(x) for x in r.command(f, "SCHEME", "L"))
                   for f in FRAMEWORKS}
        sgemm_lines = []
        for when, s in zip(("start", "end"), self.sgemm):
            if "error" in s:
                sgemm_lines.append(f"  - {when}: failed ({s['error']})")
                continue
            shapes = ", ".join(f"{x['m']}×{x['k']}·{x['k']}×{x['n']} {x['gflops']:.1f}"
                               for x in s["shapes"])
            sgemm_lines.append(f"  - {when}: {s['gflops']:.1f} GFLOP/s ({shapes}); from the "
                               f"fastest calls: {s.get('best_gflops', 0):.1f}")
        torch_version = next((p["torch"]["torch_version"] for pairs in self.results.values()
                              for p in pairs if "torch_version" in p["torch"]), "unknown")
        return [
            "# CPU training throughput: relpos against PyTorch",
            "",
            "Written by `bench/train_throughput.py` (bench/README.md explains how each figure is "
            "taken). Ratios come from runs of the same invocation; absolute figures depend on the "
            "machine's load.",
            "",
            f"- date: {self.started:%Y-%m-%d %H:%M} UTC, {self.duration_minutes():.0f} min",
            f"- machine: {cpu_model()}, {os.cpu_count()} logical CPUs, "
            f"{memory_total_bytes() / 2**30:.1f} GiB RAM; {platform.platform()}",
            f"- load average (1 min): {self.load_start:.2f} at the start, "
            f"{os.getloadavg()[0]:.2f} at the end",
            f"- relpos: git {git_revision()}; PyTorch {torch_version}",
            f"- driver: `/usr/bin/python3 bench/train_throughput.py {' '.join(sys.argv[1:])}`",
            f"- each relpos run: `OMP_NUM_THREADS={a.threads} {example['relpos']}`",
            f"- each PyTorch run: `OMP_NUM_THREADS={a.threads} {example['torch']}`",
            f"- rounds per (scheme, L): {a.rounds}, relpos then PyTorch; per run: {a.warmup} "
            f"warm-up and {a.steps} timed steps; 8192 tokens per step (batch = 8192 / L); "
            f"address-space limit {a.mem_limit_gib:.1f} GiB per run",
            f"- raw sgemm (`{' '.join(r.command('sgemm'))}`):",
            *sgemm_lines,
            f"  - reference rate (the higher): {fmt(self.sgemm_rate, '.1f')} GFLOP/s",
            "",
        ]

    def duration_minutes(self):
        return (datetime.datetime.now(datetime.timezone.utc) - self.started).total_seconds() / 60

    def percent_of_sgemm(self, scheme, length):
        g = self.value("relpos", scheme, length, "model_gflops")
        return 100.0 * g / self.sgemm_rate if g is not None and self.sgemm_rate else None

    def tables(self):
        out = ["## Results", ""]
        out += self.table("relpos tokens/s (median of rounds)",
                          self.metric_cell("relpos", "tokens_per_s", ",.0f"))
        out += self.table("PyTorch tokens/s (median of rounds)",
                          self.metric_cell("torch", "tokens_per_s", ",.0f"))

        out += self.table("Speed ratio relpos / PyTorch (median of per-round ratios)",
                          lambda s, n: fmt(self.speed_ratio(s, n), ".2f×"))
        out += self.table("relpos step time / relpos `none` step time",
                          lambda s, n: fmt(self.step_overhead(s, n), ".2f×"))
        out += self.table("relpos peak RSS (MiB)",
                          self.metric_cell("relpos", "peak_rss_mib", ",.0f"))
        out += self.table("PyTorch peak RSS (MiB)",
                          self.metric_cell("torch", "peak_rss_mib", ",.0f"))

        def gflops(s, n):
            g = self.value("relpos", s, n, "model_gflops")
            return f"{fmt(g, '.1f')} ({fmt(self.percent_of_sgemm(s, n), '.0f')}%)"
        out += self.table("relpos model GFLOP/s (% of the sgemm reference rate)", gflops)
        out += self.table("PyTorch model GFLOP/s",
                          self.metric_cell("torch", "model_gflops", ".1f"))
        return out

    def both(self, scheme, length, key, spec):
        """'relpos / PyTorch' medians of one field."""
        return " / ".join(fmt(self.value(f, scheme, length, key), spec) for f in FRAMEWORKS)

    def checks(self):
        out = ["### Same model in both: parameters and losses (relpos / PyTorch)", "",
               "| scheme | L | parameters | first loss | final loss |", "|---|---:|---:|---:|---:|"]
        for s in self.args.schemes:
            for n in self.args.lengths:
                out.append(f"| {s} | {n} | {self.both(s, n, 'parameters', ',.0f')} | "
                           f"{self.both(s, n, 'first_loss', '.3f')} | "
                           f"{self.both(s, n, 'final_loss', '.3f')} |")
        failed = [f"- {f} {s} L={n}: {self.failures(f, s, n)}" for s in self.args.schemes
                  for n in self.args.lengths for f in FRAMEWORKS if self.failures(f, s, n)]
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

    def judged(self, label, text, value, passes, cells):
        """A target row: passed, or None when not measured. A relpos run that failed in one
        of the (scheme, L) cells the figure needs is a miss."""
        if value is not None:
            return label, text, passes(value)
        failed = [f"relpos {s} L={n} failed: {self.failures('relpos', s, n)}" for s, n in cells
                  if self.value("relpos", s, n, "tokens_per_s") is None and
                  self.failures("relpos", s, n)]
        if failed:
            return label, f"{text}; {'; '.join(failed)}", False
        return label, text, None

    def speed_rows(self):
        rows = []
        for s in self.args.schemes:
            for n in (n for n in SPEEDUP_LENGTHS if n in self.args.lengths):
                r = self.speed_ratio(s, n)
                text = f"{fmt(r, '.3f×')} (target ≥ {SPEEDUP_TARGET}×)"
                rows.append(self.judged(f"{s} L={n}", text, r, lambda v: v >= SPEEDUP_TARGET,
                                        [(s, n)]))
        return rows

    def overhead_rows(self):
        if OVERHEAD_LENGTH not in self.args.lengths:
            return []
        rows = []
        for s in self.args.schemes:
            o = self.step_overhead(s, OVERHEAD_LENGTH)
            rows.append(self.judged(
                f"{s} L={OVERHEAD_LENGTH}",
                f"{fmt(o, '.3f')}× the `none` step time (target ≤ {OVERHEAD_TARGET}×)", o,
                lambda v: v <= OVERHEAD_TARGET, [(s, OVERHEAD_LENGTH), ("none", OVERHEAD_LENGTH)]))
        return rows

    def rss_rows(self):
        if RSS_LONG not in self.args.lengths or RSS_SHORT not in self.args.lengths:
            return []
        rows = []
        for s in self.args.schemes:
            long = self.value("relpos", s, RSS_LONG, "peak_rss_mib")
            short = self.value("relpos", s, RSS_SHORT, "peak_rss_mib")
            q = long / short if long and short else None
            torch_long = self.value("torch", s, RSS_LONG, "peak_rss_mib")
            torch_text = (f"{torch_long:,.0f} MiB" if torch_long is not None else
                          self.failures("torch", s, RSS_LONG) or "not run")
            rows.append(self.judged(
                s, f"{fmt(long, ',.0f')} MiB at L={RSS_LONG} / {fmt(short, ',.0f')} MiB at "
                   f"L={RSS_SHORT} = {fmt(q, '.3f')}× (target ≤ {RSS_TARGET}×); PyTorch at "
                   f"L={RSS_LONG}: {torch_text}",
                q, lambda v: v <= RSS_TARGET, [(s, RSS_LONG), (s, RSS_SHORT)]))
        return rows

    def rate_rows(self):
        if SGEMM_LENGTH not in self.args.lengths:
            return []
        rows = []
        for s in self.args.schemes:
            pct = self.percent_of_sgemm(s, SGEMM_LENGTH)
            g = self.value("relpos", s, SGEMM_LENGTH, "model_gflops")
            rows.append(self.judged(
                f"{s} L={SGEMM_LENGTH}",
                f"{fmt(g, '.1f')} GFLOP/s = {fmt(pct, '.0f')}% of {fmt(self.sgemm_rate, '.1f')} "
                f"(target ≥ {SGEMM_TARGET:.0%})",
                pct, lambda v: v >= 100 * SGEMM_TARGET, [(s, SGEMM_LENGTH)]))
        return rows

    def targets(self):
        return ["## Targets", "",
                *self.target(f"relpos ≥ {SPEEDUP_TARGET}× PyTorch tokens/s at L=128, 512, 1024",
                             self.speed_rows()),
                *self.target(f"every scheme's relpos step time ≤ {OVERHEAD_TARGET}× `none` at "
                             f"L={OVERHEAD_LENGTH}", self.overhead_rows()),
                *self.target(f"relpos peak RSS at L={RSS_LONG} ≤ {RSS_TARGET}× at L={RSS_SHORT}",
                             self.rss_rows()),
                *self.target(f"relpos model GFLOP/s at L={SGEMM_LENGTH} ≥ {SGEMM_TARGET:.0%} of "
                             f"raw sgemm", self.rate_rows()),
                ""]

    def raw(self):
        lines = [json.dumps({"when": w, "framework": "sgemm", **s})
                 for w, s in zip(("start", "end"), self.sgemm)]
        for (s, n), pairs in self.results.items():
            for i, p in enumerate(pairs):
                for f in FRAMEWORKS:
                    lines.append(json.dumps({"round": i + 1, **p[f], "framework": f,
                                             "scheme": s, "len": n}))
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


def summarise(framework, result):
    if "error" in result:
        return f"failed: {result['error']}"
    if framework == "sgemm":
        return f"{result['gflops']:.1f} GFLOP/s"
    return (f"{result['tokens_per_s']:,.0f} tokens/s, {result['peak_rss_mib']:,.0f} MiB, "
            f"loss {result['first_loss']:.3f} -> {result['final_loss']:.3f}")


def main():
    args = parse_args()
    runner = Runner(args)
    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = os.getloadavg()[0]
    total = len(args.schemes) * len(args.lengths) * args.rounds * 2 + 2
    done = 0

    def measure(framework, scheme=None, length=None, label=""):
        nonlocal done
        result = runner.run(framework, scheme, length)
        done += 1
        print(f"[{done}/{total}] {framework} {label}: {summarise(framework, result)}",
              file=sys.stderr, flush=True)
        return result

    sgemm = [measure("sgemm", label="start")]
    results = {}
    for length in args.lengths:
        for scheme in args.schemes:
            pairs = results.setdefault((scheme, length), [])
            for r in range(args.rounds):
                label = f"{scheme} L={length} round {r + 1}"
                pairs.append({f: measure(f, scheme, length, label) for f in FRAMEWORKS})
    sgemm.append(measure("sgemm", label="end"))

    report = Report(args, runner, results, sgemm, started, load_start)
    write_atomically(args.out, report.text())
    print("\n".join(report.targets()))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
