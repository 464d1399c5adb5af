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


def training_length(folder, results):
    """The one training length of a part's variants."""
    train = {int(r["train_length"]) for r in results}
    if len(train) != 1:
        raise UsageError(f"{folder}/results.csv: training lengths {sorted(train)}; "
                         "choose one with --length")
    return train.pop()


def bits_at(folder, results, length):
    """{variant: (bits/byte, 95% half-width)} at the length."""
    out = {}
    for r in results:
        if length not in r["lengths"]:
            raise UsageError(f"{folder}/results.csv: no column loss_at_{length}")
        loss = r["lengths"][length]
        if not math.isnan(loss):
            out[r["variant"]] = (loss / math.log(2), r["lengths_band"].get(length, math.nan)
                                 / math.log(2))
    return out


def separations(folder, length):
    """{(a, b): sign} for the pairs whose paired bits/byte difference at the length has an
    interval excluding 0: +1 when a is worse (higher) than b, -1 when better."""
    path = folder / "differences.csv"
    rows = read_csv_rows(path)
    if not rows:
        raise UsageError(f"{path}: empty, expected a header line")
    out = {}
    for r in (dict(zip(rows[0], row)) for row in rows[1:]):
        if r["metric"] != "bits_per_byte" or int(float(r["length"])) != length:
            continue
        sign = 0
        if r["excludes_zero"] == "true":
            sign = 1 if float(r["mean"]) > 0 else -1
        out[(r["variant_a"], r["variant_b"])] = sign
        out[(r["variant_b"], r["variant_a"])] = -sign
    return out


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


def report(a_dir, a_results, b_dir, b_results, length):
    """(Markdown of one length, {variant: (A's point, B's point)}, tau, group counts)."""
    a_bits, b_bits = bits_at(a_dir, a_results, length), bits_at(b_dir, b_results, length)
    variants = [v for v in a_bits if v in b_bits]
    if len(variants) < 2:
        raise UsageError(f"{a_dir} and {b_dir}: fewer than two variants in both at {length}")
    a_sep, b_sep = separations(a_dir, length), separations(b_dir, length)
    rank_a = {v: i + 1 for i, v in enumerate(sorted(variants, key=lambda v: a_bits[v][0]))}
    rank_b = {v: i + 1 for i, v in enumerate(sorted(variants, key=lambda v: b_bits[v][0]))}
    lines = [f"Bits/byte at length {length}, mean ± 95% interval over seeds; rank 1 is the "
             "lowest.", "",
             f"| variant | {a_dir.name} | rank | {b_dir.name} | rank |", "|---|---:|---:|---:|---:|"]
    for v in sorted(variants, key=lambda v: rank_a[v]):
        lines.append(f"| {v} | {a_bits[v][0]:.3f} ± {a_bits[v][1]:.3f} | {rank_a[v]} | "
                     f"{b_bits[v][0]:.3f} ± {b_bits[v][1]:.3f} | {rank_b[v]} |")
    tau = kendall_tau([a_bits[v][0] for v in variants], [b_bits[v][0] for v in variants])
    lines += ["", f"Kendall's tau between the two rankings: {tau:.2f} ({len(variants)} variants)."]
    groups = {key: [] for key in TITLES}
    for i, a in enumerate(variants):
        for b in variants[i + 1:]:
            sa, sb = a_sep.get((a, b)), b_sep.get((a, b))
            if sa is None or sb is None:
                continue  # a pair a part did not difference (e.g. learned past its length)
            if sa and sb and sa != sb:
                groups["reversed"].append(f"{a} vs {b} ({a_dir.name}: {order(sa)}, "
                                          f"{b_dir.name}: {order(sb)})")
            elif sa and sb:
                groups["same"].append(f"{a} {order(sa)} {b}")
            elif sa or sb:
                groups["one"].append(f"{a} {order(sa or sb)} {b} "
                                     f"({a_dir.name if sa else b_dir.name} only)")
            else:
                groups["neither"].append(f"{a} ~ {b}")
    lines += ["", "Pairs by their paired differences (\">\": the first is worse, i.e. higher):", ""]
    for key, title in TITLES.items():
        lines.append(f"- **{title}** ({len(groups[key])}): " + (", ".join(groups[key]) or "none"))
    points = {v: (a_bits[v], b_bits[v]) for v in variants}
    return "\n".join(lines) + "\n", points, tau, {k: len(g) for k, g in groups.items()}


def summary(a_dir, b_dir, rows):
    """Markdown: tau and the four group counts at each length."""
    lines = [f"Ranking of {a_dir.name} against {b_dir.name} by length (pairs counted by "
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


def lengths_of(args, a_dir, a_results, b_results):
    """The lengths asked for: --length's values, every common one for `all`, or A's
    training length."""
    if not args.length:
        return [training_length(a_dir, a_results)]
    if args.length == ["all"]:
        common = set(a_results[0]["lengths"]) & set(b_results[0]["lengths"])
        return sorted(common)
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
        a_results, b_results = read_results(args.a_dir), read_results(args.b_dir)
        sections, panels, rows = [], [], []
        for length in lengths_of(args, args.a_dir, a_results, b_results):
            text, points, tau, counts = report(args.a_dir, a_results, args.b_dir, b_results,
                                               length)
            sections.append(text)
            panels.append((length, points))
            rows.append((length, tau, counts))
        if len(sections) > 1:
            sections = [summary(args.a_dir, args.b_dir, rows)] + [
                f"## At length {length}\n\n{text}" for (length, _, _), text in zip(rows, sections)]
        sys.stdout.write("\n".join(sections))
        if args.figure is not None:
            figure(panels, args.a_dir.name, args.b_dir.name, args.figure)
    except UsageError as e:
        print(f"study_ranking.py: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
