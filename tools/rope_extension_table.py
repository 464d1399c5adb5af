#!/usr/bin/env python3
"""Tables of the RoPE context-extension study (tools/rope_extension_study.sh).

Usage: tools/rope_extension_table.py EVALS_DIR [--study]
Reads <stage>-s<seed>-<kind>.json (relpos eval output) and prints, per stage (base:
no fine-tuning; tuned: after 100 steps at 256), the loss at each length as
mean ± std over the seeds (n), and its change against the trained model's own loss
at the training length 64 (base, kind none, same seed).
With --study (the 6,000-step models of study part extensions, docs/results/study.md):
bits/byte as mean ± the 95% t interval's half-width, and each kind's difference from the
plain model (kind none, same stage) at the same length, paired by seed, with its 95%
interval; "*" marks a difference whose interval excludes 0.
"""
import collections
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plots.statistics import mean_and_ci95  # noqa: E402

ORDER = ["none", "linear", "ntk", "dynamic_ntk", "yarn"]
TITLES = {"base": "without fine-tuning", "tuned": "after 100 steps at 256 (--init-from)"}


def read(folder, metric):
    """{(stage, kind, length): {seed: value}} and {stage: [kinds]} of a folder of evals."""
    values = collections.defaultdict(dict)
    kinds = {}
    for name in sorted(os.listdir(folder)):
        m = re.fullmatch(r"(base|tuned)-s(\d+)-(\w+)\.json", name)
        if not m:
            continue
        stage, seed, kind = m.groups()
        kinds.setdefault(stage, set()).add(kind)
        with open(os.path.join(folder, name)) as f:
            for point in json.load(f)["results"]:
                values[(stage, kind, point["length"])][seed] = point[metric]
    return values, {stage: sorted(ks, key=ORDER.index) for stage, ks in kinds.items()}


def lengths_of(values, stage):
    return sorted({n for (s, _, n) in values if s == stage})


def classic(folder):
    losses, kinds = read(folder, "loss")
    reference = losses[("base", "none", 64)]  # seed -> the plain model's loss at 64
    for stage in ("base", "tuned"):
        if stage not in kinds:
            continue
        ls = lengths_of(losses, stage)
        print("\n%s\n" % TITLES[stage])
        print("| kind | " + " | ".join("loss @%d" % n for n in ls) + " | "
              + " | ".join("@%d vs plain @64" % n for n in ls) + " |")
        print("|---" * (2 * len(ls) + 1) + "|")
        for kind in kinds[stage]:
            cells, rel = [], []
            for n in ls:
                by_seed = losses[(stage, kind, n)]
                v = list(by_seed.values())
                r = [100.0 * (loss / reference[seed] - 1.0) for seed, loss in by_seed.items()]
                cells.append("%.4f ± %.4f" % (statistics.mean(v), spread(v)))
                rel.append("%+.1f%% ± %.1f" % (statistics.mean(r), spread(r)))
            n_seeds = len(losses[(stage, kind, ls[0])])
            print("| %s (n=%d) | %s | %s |" % (kind, n_seeds, " | ".join(cells), " | ".join(rel)))


def study(folder):
    bpb, kinds = read(folder, "bits_per_byte")
    for stage in ("base", "tuned"):
        if stage not in kinds:
            continue
        ls = lengths_of(bpb, stage)
        print("\n%s: bits/byte, mean ± 95%% interval\n" % TITLES[stage])
        print("| kind | n | " + " | ".join("@%d" % n for n in ls) + " |")
        print("|---|---:" + "|---:" * len(ls) + "|")
        for kind in kinds[stage]:
            cells = ["%.4f ± %.4f" % mean_and_ci95(list(bpb[(stage, kind, n)].values()))
                     for n in ls]
            print("| %s | %d | %s |" % (kind, len(bpb[(stage, kind, ls[0])]), " | ".join(cells)))
        print("\n%s: kind − plain (kind none) in bits/byte, paired by seed\n" % TITLES[stage])
        print("| kind | " + " | ".join("@%d" % n for n in ls) + " |")
        print("|---" + "|---:" * len(ls) + "|")
        for kind in kinds[stage]:
            if kind == "none":
                continue
            cells = []
            for n in ls:
                plain, other = bpb[(stage, "none", n)], bpb[(stage, kind, n)]
                d = [other[seed] - plain[seed] for seed in sorted(other) if seed in plain]
                mean, half = mean_and_ci95(d)
                cells.append("%+.4f ± %.4f%s" % (mean, half, "*" if abs(mean) > half else ""))
            print("| %s | %s |" % (kind, " | ".join(cells)))


def spread(values):
    """The sample standard deviation; 0 for a single value."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "--study"):
        sys.exit("usage: tools/rope_extension_table.py EVALS_DIR [--study]")
    (study if len(sys.argv) == 3 else classic)(sys.argv[1])
