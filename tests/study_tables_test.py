#!/usr/bin/env python3
"""The study's table tools on planted inputs: what they print is what was worked out by hand.
- tools/rope_extension_table.py --study: means, 95% t intervals, differences paired by seed;
- tools/study_ranking.py: ranks, Kendall's tau, pairs sorted by their paired differences.

Usage: study_tables_test.py  (ctest: study_tables_match_hand_computation)
"""

import json
import math
import os
import subprocess
import sys
import tempfile

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools")
LN2 = math.log(2)


def expect_lines(args, expected, what):
    """Runs a tool and fails, printing its output, unless it printed every expected line."""
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                         check=True).stdout
    missing = [line for line in expected if line not in out.splitlines()]
    if missing:
        print(out)
        sys.exit("%s: lines not printed: %s" % (os.path.basename(args[0]), missing))
    print("ok:", what)


# --- rope_extension_table.py --study ---
# bits/byte at 64 and 256 of three seeds. yarn is the plain model + 0.1 + a small per-seed
# wobble at 256 (differences 0.09, 0.10, 0.11: mean 0.1, sd 0.01, half-width
# 4.303 * 0.01 / sqrt(3) = 0.0248, excludes 0) and equal to it at 64 but for seed 2's
# +0.03 (differences 0, 0, 0.03: mean 0.01, half-width 4.303 * 0.01732 / sqrt(3) = 0.0430,
# does not exclude 0). The plain model's seeds differ by 1.0, so unpaired intervals
# would never separate the two.
PLAIN = {0: (2.0, 3.0), 1: (3.0, 4.0), 2: (4.0, 5.0)}
YARN = {0: (2.0, 3.09), 1: (3.0, 4.10), 2: (4.03, 5.11)}


def write(folder, seed, kind, values):
    results = [{"length": n, "bits_per_byte": v, "loss": v * 0.6931}
               for n, v in zip((64, 256), values)]
    with open(os.path.join(folder, "base-s%d-%s.json" % (seed, kind)), "w") as f:
        json.dump({"results": results}, f)


def rope_extension_table():
    with tempfile.TemporaryDirectory() as folder:
        for seed in PLAIN:
            write(folder, seed, "none", PLAIN[seed])
            write(folder, seed, "yarn", YARN[seed])
        expect_lines([os.path.join(TOOLS, "rope_extension_table.py"), folder, "--study"], [
            "| none | 3 | 3.0000 ± 2.4843 | 4.0000 ± 2.4843 |",  # 4.303 * 1 / sqrt(3)
            "| yarn | +0.0100 ± 0.0430 | +0.1000 ± 0.0248* |",
        ], "rope_extension_table.py --study: means, intervals and paired differences")


# --- study_ranking.py ---
# Bits/byte at 64. Part a: x < y < z. Part b: y < x < z. Paired differences (a - b):
# x-y separated in both with opposite signs (a reversal), x-z separated in both (same
# order), y-z separated in part a only. At 128 both parts read x < y < z, every pair
# separated in both (tau 1).
BITS = {"a": {"x": 1.0, "y": 1.1, "z": 1.3}, "b": {"x": 1.2, "y": 1.1, "z": 1.25}}
DIFFS = {"a": [("x", "y", -0.1, True), ("x", "z", -0.3, True), ("y", "z", -0.2, True)],
         "b": [("x", "y", 0.1, True), ("x", "z", -0.05, True), ("y", "z", -0.15, False)]}
BITS_128 = {"x": 2.0, "y": 2.1, "z": 2.2}


def write_part(folder, part):
    os.makedirs(folder)
    with open(os.path.join(folder, "results.csv"), "w") as f:
        f.write("variant,scheme,data,train_length,loss_at_64,loss_at_64_ci95,loss_at_128,"
                "loss_at_128_ci95\n")
        for v, bits in BITS[part].items():
            f.write(f"{v},{v},corpus,64,{bits * LN2},{0.01 * LN2},{BITS_128[v] * LN2},"
                    f"{0.01 * LN2}\n")
    with open(os.path.join(folder, "differences.csv"), "w") as f:
        f.write("metric,data,train_length,length,variant_a,variant_b,n,mean,ci95,low,high,"
                "excludes_zero\n")
        for a, b, mean, excludes in DIFFS[part]:
            f.write(f"bits_per_byte,corpus,64,64,{a},{b},5,{mean},0.02,0,0,"
                    f"{'true' if excludes else 'false'}\n")
            f.write(f"bits_per_byte,corpus,64,128,{a},{b},5,{BITS_128[a] - BITS_128[b]},"
                    "0.02,0,0,true\n")


def study_ranking():
    with tempfile.TemporaryDirectory() as root:
        for part in ("a", "b"):
            write_part(os.path.join(root, part), part)
        parts = [os.path.join(TOOLS, "study_ranking.py"), os.path.join(root, "a"),
                 os.path.join(root, "b")]
        expect_lines(parts, [
            "| x | 1.000 ± 0.010 | 1 | 1.200 ± 0.010 | 2 |",
            "| y | 1.100 ± 0.010 | 2 | 1.100 ± 0.010 | 1 |",
            "Kendall's tau between the two rankings: 0.33 (3 variants).",  # (2 - 1) / 3
            "- **separated in both, same order** (1): x < z",
            "- **separated in both, opposite orders** (1): x vs y (a: <, b: >)",
            "- **separated in one part only** (1): y < z (a only)",
            "- **separated in neither** (0): none",
        ], "study_ranking.py: ranks, tau and the four groups of pairs")
        expect_lines(parts + ["--length", "all"], [
            "| 64 | 0.33 | 1 | 1 | 1 | 0 |",
            "| 128 | 1.00 | 3 | 0 | 0 | 0 |",
            "## At length 128",
            "| z | 2.200 ± 0.010 | 3 | 2.200 ± 0.010 | 3 |",
        ], "study_ranking.py --length all: the summary by length and a section a length")
        bad = subprocess.run([sys.executable, *parts, "--length", "all", "--length", "64"],
                             capture_output=True, text=True)
        if bad.returncode != 2 or len(bad.stderr.splitlines()) != 1:
            sys.exit("study_ranking.py: 'all' beside a length should fail in one line with "
                     f"exit 2, got {bad.returncode}: {bad.stderr!r}")
        print("ok: study_ranking.py: 'all' beside a length is refused in one line")


if __name__ == "__main__":
    rope_extension_table()
    study_ranking()
