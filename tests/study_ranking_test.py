#!/usr/bin/env python3
"""tools/study_ranking.py on two planted reports: the ranks, Kendall's tau and the sorting
of pairs (same order, reversed, one part only, neither) are the ones worked out by hand.

Usage: study_ranking_test.py  (ctest: study_ranking_sorts_pairs)
"""

import math
import os
import subprocess
import sys
import tempfile

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools",
                    "study_ranking.py")
LN2 = math.log(2)

# Bits/byte at 64. Part a: x < y < z. Part b: y < x < z. Paired differences (a - b):
# x-y separated in both with opposite signs (a reversal), x-z separated in both (same
# order), y-z separated in part a only.
BITS = {"a": {"x": 1.0, "y": 1.1, "z": 1.3}, "b": {"x": 1.2, "y": 1.1, "z": 1.25}}
DIFFS = {"a": [("x", "y", -0.1, True), ("x", "z", -0.3, True), ("y", "z", -0.2, True)],
         "b": [("x", "y", 0.1, True), ("x", "z", -0.05, True), ("y", "z", -0.15, False)]}


def write_part(folder, part):
    os.makedirs(folder)
    with open(os.path.join(folder, "results.csv"), "w") as f:
        f.write("variant,train_length,loss_at_64,loss_at_64_ci95\n")
        for v, bits in BITS[part].items():
            f.write(f"{v},64,{bits * LN2},{0.01 * LN2}\n")
    with open(os.path.join(folder, "differences.csv"), "w") as f:
        f.write("metric,data,train_length,length,variant_a,variant_b,n,mean,ci95,low,high,"
                "excludes_zero\n")
        for a, b, mean, excludes in DIFFS[part]:
            f.write(f"bits_per_byte,corpus,64,64,{a},{b},5,{mean},0.02,0,0,"
                    f"{'true' if excludes else 'false'}\n")


def main():
    with tempfile.TemporaryDirectory() as root:
        for part in ("a", "b"):
            write_part(os.path.join(root, part), part)
        out = subprocess.run([sys.executable, TOOL, os.path.join(root, "a"),
                              os.path.join(root, "b")], capture_output=True, text=True,
                             check=True).stdout
    expected = [
        "| x | 1.000 ± 0.010 | 1 | 1.200 ± 0.010 | 2 |",
        "| y | 1.100 ± 0.010 | 2 | 1.100 ± 0.010 | 1 |",
        "Kendall's tau between the two rankings: 0.33 (3 variants).",  # (2 - 1) / 3
        "- **separated in both, same order** (1): x < z",
        "- **separated in both, opposite orders** (1): x vs y (a: <, b: >)",
        "- **separated in one part only** (1): y < z (a only)",
        "- **separated in neither** (0): none",
    ]
    missing = [line for line in expected if line not in out.splitlines()]
    if missing:
        print(out)
        sys.exit("study_ranking.py: lines not printed: %s" % missing)
    print("ok: ranks, tau and the four groups of pairs as worked out by hand")


if __name__ == "__main__":
    main()
