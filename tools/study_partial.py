#!/usr/bin/env python3
"""The finished runs of a study part that stopped at its time limit (tools/study.sh).

    tools/study_partial.py OUT_DIR DEST.md VARIANT...

Reads OUT_DIR/VARIANT/seed-*/ablation.json (or OUT_DIR/VARIANT/ablation.json for a sweep
without seeds) and writes DEST.md: for each variant, how many runs finished and their mean
bits/byte at each evaluated length. The part's full report (means with 95% intervals,
paired differences) is written by `relpos ablate` when every run has finished.
"""
import glob
import json
import os
import statistics
import sys


def finished_runs(out_dir, variant):
    paths = sorted(glob.glob(os.path.join(out_dir, variant, "seed-*", "ablation.json")))
    paths = paths or glob.glob(os.path.join(out_dir, variant, "ablation.json"))
    return [json.load(open(path)) for path in paths]


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: tools/study_partial.py OUT_DIR DEST.md VARIANT...")
    out_dir, dest, variants = sys.argv[1], sys.argv[2], sys.argv[3:]
    runs = {variant: finished_runs(out_dir, variant) for variant in variants}
    lengths = sorted({point["length"] for rs in runs.values() for r in rs
                      for point in r.get("extrapolation", [])})
    lines = ["# Finished runs so far (the part is not finished)", "",
             "Mean bits/byte over the finished seeds; no interval until every seed is in.", "",
             "| variant | runs | " + " | ".join(f"{n}" for n in lengths) + " |",
             "|---|---:|" + "---:|" * len(lengths)]
    for variant, rs in runs.items():
        cells = []
        for n in lengths:
            values = [p["bits_per_byte"] for r in rs for p in r.get("extrapolation", [])
                      if p["length"] == n and p.get("bits_per_byte") is not None]
            cells.append(f"{statistics.mean(values):.3f}" if values else "-")
        lines.append(f"| {variant} | {len(rs)} | " + " | ".join(cells) + " |")
    with open(dest + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(dest + ".tmp", dest)


if __name__ == "__main__":
    main()
