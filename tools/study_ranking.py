#!/usr/bin/python3
"""Whether two study parts rank the position schemes alike (issue 29, item 5: a second
model size for ranking stability), from their reports (results.csv, differences.csv).

    tools/study_ranking.py A_DIR B_DIR [--length N ... | --length all] [--figure OUT.png]

A_DIR and B_DIR are report folders of `relpos ablate` (e.g. docs/results/study/text and
docs/results/study/size). For the variants both hold, at each length N (repeatable;
`all`: every length both parts evaluated; default: the training length), it prints in
Markdown: each variant's bits/byte (mean ± 95% t interval) and rank in each part;
Kendall's tau between the two rankings; and every pair of variants sorted by what the
differences paired by seed say in each part: separated in both in the same order,
separated in both in opposite orders (a reversal), separated in one part only, separated
in neither. With several lengths, a table of tau and the four counts by length comes
first. With --figure, OUT.png and OUT.svg draw B's bits/byte against A's, each variant
with its two intervals, one panel a length.
Bad input: one line on stderr, exit 2.
"""

import argparse
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plots.ablation_results import read_results  # noqa: E402
from plots.common import UsageError, import_pyplot, read_csv_rows, require_png, save  # noqa: E402


def training_length(part):
    """The one training length of a Part's variants."""
    train = {int(r["train_length"]) for r in part.results}
    if len(train) != 1:
        raise UsageError(f"{part.folder}/results.csv: training lengths {sorted(train)}; "
                         "choose one with --length")
    return train.pop()


def bits_at(part, length):
    """{variant: (bits/byte, 95% half-width)} of a Part at the length."""
    out = {}
    for r in part.results:
        if length not in r["lengths"]:
            raise UsageError(f"{part.folder}/results.csv: no column loss_at_{length}")
        loss = r["lengths"][length]
        if not math.isnan(loss):
            out[r["variant"]] = (loss / math.log(2), r["lengths_band"].get(length, math.nan)
                                 / math.log(2))
    return out


def separations(folder):
    """{length: {(a, b): sign}} from the part's differences.csv, read once: the sign is +1
    when a's paired bits/byte difference from b has an interval excluding 0 and a is worse
    (higher), -1 when better, 0 when the interval includes 0."""
    path = folder / "differences.csv"
    rows = read_csv_rows(path)
    if not rows:
        raise UsageError(f"{path}: empty, expected a header line")
    out = {}
    for r in (dict(zip(rows[0], row)) for row in rows[1:]):
        if r["metric"] != "bits_per_byte":
            continue
        sign = 0
        if r["excludes_zero"] == "true":
            sign = 1 if float(r["mean"]) > 0 else -1
        pairs = out.setdefault(int(float(r["length"])), {})
        pairs[(r["variant_a"], r["variant_b"])] = sign
        pairs[(r["variant_b"], r["variant_a"])] = -sign
    return out


class Part:
    """One part's report folder, read once: its results.csv rows and its separations."""

    def __init__(self, folder):
        self.folder = folder
        self.name = folder.name
        self.results = read_results(folder)
        self.separations = separations(folder)


def kendall_tau(xs, ys):
    """Kendall's tau-a of two score lists (ties count as neither concordant nor discordant)."""
    n, s = len(xs), 0
    for i in range(n):
        for j in range(i + 1, n):
            product = (xs[i] - xs[j]) * (ys[i] - ys[j])
            s += (product > 0) - (product < 0)
    return 2.0 * s / (n * (n - 1)) if n > 1 else math.nan


def order(sign):
    """">" for a separated pair whose first variant is worse (higher), "<" for better."""
    return ">" if sign > 0 else "<"


TITLES = {"same": "separated in both, same order", "reversed": "separated in both, "
          "opposite orders", "one": "separated in one part only",
          "neither": "separated in neither"}


def report(a, b, length):
    """(Markdown of one length, {variant: (A's point, B's point)}, tau, group counts) for
    two Parts."""
    a_bits, b_bits = bits_at(a, length), bits_at(b, length)
    variants = [v for v in a_bits if v in b_bits]
    if len(variants) < 2:
        raise UsageError(f"{a.folder} and {b.folder}: fewer than two variants in both at "
                         f"{length}")
    a_sep, b_sep = a.separations.get(length, {}), b.separations.get(length, {})
    rank_a = {v: i + 1 for i, v in enumerate(sorted(variants, key=lambda v: a_bits[v][0]))}
    rank_b = {v: i + 1 for i, v in enumerate(sorted(variants, key=lambda v: b_bits[v][0]))}
    lines = [f"Bits/byte at length {length}, mean ± 95% interval over seeds; rank 1 is the "
             "lowest.", "",
             f"| variant | {a.name} | rank | {b.name} | rank |", "|---|---:|---:|---:|---:|"]
    for v in sorted(variants, key=lambda v: rank_a[v]):
        lines.append(f"| {v} | {a_bits[v][0]:.3f} ± {a_bits[v][1]:.3f} | {rank_a[v]} | "
                     f"{b_bits[v][0]:.3f} ± {b_bits[v][1]:.3f} | {rank_b[v]} |")
    tau = kendall_tau([a_bits[v][0] for v in variants], [b_bits[v][0] for v in variants])
    lines += ["", f"Kendall's tau between the two rankings: {tau:.2f} ({len(variants)} variants)."]
    groups = {key: [] for key in TITLES}
    for i, x in enumerate(variants):
        for y in variants[i + 1:]:
            sa, sb = a_sep.get((x, y)), b_sep.get((x, y))
            if sa is None or sb is None:
                continue  # a pair a part did not difference (e.g. learned past its length)
            if sa and sb and sa != sb:
                groups["reversed"].append(f"{x} vs {y} ({a.name}: {order(sa)}, "
                                          f"{b.name}: {order(sb)})")
            elif sa and sb:
                groups["same"].append(f"{x} {order(sa)} {y}")
            elif sa or sb:
                groups["one"].append(f"{x} {order(sa or sb)} {y} "
                                     f"({a.name if sa else b.name} only)")
            else:
                groups["neither"].append(f"{x} ~ {y}")
    lines += ["", "Pairs by their paired differences (\">\": the first is worse, i.e. higher):", ""]
    for key, title in TITLES.items():
        lines.append(f"- **{title}** ({len(groups[key])}): " + (", ".join(groups[key]) or "none"))
    points = {v: (a_bits[v], b_bits[v]) for v in variants}
    return "\n".join(lines) + "\n", points, tau, {k: len(g) for k, g in groups.items()}


def summary(a, b, rows):
    """Markdown: tau and the four group counts at each length."""
    lines = [f"Ranking of {a.name} against {b.name} by length (pairs counted by "
             "their paired differences; sections below):", "",
             "| length | Kendall's tau | " + " | ".join(TITLES.values()) + " |",
             "|---:|---:|" + "---:|" * len(TITLES)]
    for length, tau, counts in rows:
        lines.append(f"| {length} | {tau:.2f} | " + " | ".join(str(counts[k]) for k in TITLES)
                     + " |")
    return "\n".join(lines) + "\n"


def figure(panels, a_name, b_name, out):
    """panels: [(length, {variant: ((A mean, A half-width), (B mean, B half-width))})], three
    to a row; a variant keeps its colour in every panel."""
    plt = import_pyplot()
    columns = min(3, len(panels))
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5.5 * columns, 5 * rows), squeeze=False)
    variants = list(dict.fromkeys(v for _, points in panels for v in points))
    colours = {v: f"C{i % 10}" for i, v in enumerate(variants)}
    for ax, (length, points) in zip(axes.flat, panels):
        for v, ((a_m, a_h), (b_m, b_h)) in points.items():
            ax.errorbar(a_m, b_m, xerr=a_h, yerr=b_h, fmt="o", capsize=3, color=colours[v])
            ax.annotate(v, (a_m, b_m), textcoords="offset points", xytext=(5, 4), fontsize=8)
        ax.set_xlabel(f"{a_name}: bits/byte at {length}")
        ax.set_ylabel(f"{b_name}: bits/byte at {length}")
        ax.set_title(f"{a_name} against {b_name} at {length} (95% intervals)")
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.tight_layout()
    save(fig, out.with_suffix(""))


def lengths_of(args, a, b):
    """The lengths asked for: --length's values, every common one for `all`, or A's
    training length."""
    if not args.length:
        return [training_length(a)]
    if args.length == ["all"]:
        return sorted(set(a.results[0]["lengths"]) & set(b.results[0]["lengths"]))
    lengths = []
    for value in args.length:
        if not value.isdigit() or int(value) == 0:
            raise UsageError(f"--length '{value}': expected a positive length or 'all' "
                             "(alone)")
        lengths.append(int(value))
    return lengths


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a_dir", type=Path)
    parser.add_argument("b_dir", type=Path)
    parser.add_argument("--length", action="append")
    parser.add_argument("--figure", type=Path)
    args = parser.parse_args()
    try:
        if args.figure is not None:
            require_png(args.figure)
        a, b = Part(args.a_dir), Part(args.b_dir)
        sections, panels, rows = [], [], []
        for length in lengths_of(args, a, b):
            text, points, tau, counts = report(a, b, length)
            sections.append(text)
            panels.append((length, points))
            rows.append((length, tau, counts))
        if len(sections) > 1:
            sections = [summary(a, b, rows)] + [
                f"## At length {length}\n\n{text}" for (length, _, _), text in zip(rows, sections)]
        sys.stdout.write("\n".join(sections))
        if args.figure is not None:
            figure(panels, a.name, b.name, args.figure)
    except UsageError as e:
        print(f"study_ranking.py: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
