#!/usr/bin/env python3
"""Tables of the RoPE context-extension study (tools/rope_extension_study.sh).

Usage: tools/rope_extension_table.py EVALS_DIR
Reads <stage>-s<seed>-<kind>.json (relpos eval output) and prints, per stage (base:
no fine-tuning; tuned: after 100 steps at 256), the loss at each length as
mean ± std over the seeds (n), and its change against the trained model's own loss
at the training length 64 (base, kind none, same seed).
"""
import collections
import json
import os
import re
import statistics
import sys


def main(folder):
    losses = collections.defaultdict(list)  # (stage, kind, length) -> [loss per seed]
    reference = {}  # seed -> the plain model's loss at 64
    kinds, lengths = {}, {}
    for name in sorted(os.listdir(folder)):
        m = re.fullmatch(r"(base|tuned)-s(\d+)-(\w+)\.json", name)
        if not m:
            continue
        stage, seed, kind = m.groups()
        kinds.setdefault(stage, [])
        if kind not in kinds[stage]:
            kinds[stage].append(kind)
        with open(os.path.join(folder, name)) as f:
            for point in json.load(f)["results"]:
                losses[(stage, kind, point["length"])].append((seed, point["loss"]))
                if (stage, kind, point["length"]) == ("base", "none", 64):
                    reference[seed] = point["loss"]
                lengths.setdefault(stage, set()).add(point["length"])
    order = ["none", "linear", "ntk", "dynamic_ntk", "yarn"]
    for stage in ("base", "tuned"):
        if stage not in kinds:
            continue
        ls = sorted(lengths[stage])
        print("\n%s\n" % ("without fine-tuning" if stage == "base"
                          else "after 100 steps at 256 (--init-from)"))
        print("| kind | " + " | ".join("loss @%d" % n for n in ls) + " | "
              + " | ".join("@%d vs plain @64" % n for n in ls) + " |")
        print("|---" * (2 * len(ls) + 1) + "|")
        for kind in sorted(kinds[stage], key=order.index):
            cells, rel = [], []
            for n in ls:
                v = [loss for _, loss in losses[(stage, kind, n)]]
                r = [100.0 * (loss / reference[seed] - 1.0)
                     for seed, loss in losses[(stage, kind, n)]]
                cells.append("%.4f ± %.4f" % (statistics.mean(v), spread(v)))
                rel.append("%+.1f%% ± %.1f" % (statistics.mean(r), spread(r)))
            n_seeds = len(losses[(stage, kind, ls[0])])
            print("| %s (n=%d) | %s | %s |" % (kind, n_seeds, " | ".join(cells), " | ".join(rel)))


def spread(values):
    """The sample standard deviation; 0 for a single value."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
