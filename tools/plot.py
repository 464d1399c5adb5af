#!/usr/bin/python3
"""Draw relpos's figures with matplotlib from the data files relpos writes.

Usage (Debian: apt-get install python3-matplotlib):
    tools/plot.py ablation DIR
        DIR/results.csv and DIR/<variant>/metrics.jsonl (a `relpos ablate` out_dir)
        -> DIR/train_loss, DIR/val_loss and DIR/extrapolation, each .png and .svg
    tools/plot.py positions CSV OUT.png [--title TEXT]
        a `relpos positions --csv` matrix -> a heatmap, OUT.png and OUT.svg
    tools/plot.py runs OUT.png LABEL=RUN_DIR... [--title TEXT]
        the training (solid) and validation (dashed) loss of each run's metrics.jsonl in one
        panel -> OUT.png and OUT.svg (e.g. one run in fp32 and one in bf16)

One panel per data set; each scheme keeps its colour and marker in every panel.
Bad input: one line on stderr, exit 2. matplotlib missing: exit 3. Every file is
written to a .tmp file first and renamed, so none is left half-written.
"""

import argparse
import csv
import json
import math
import os
import sys
from pathlib import Path

EXIT_USAGE = 2
EXIT_NO_MATPLOTLIB = 3
LINESTYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<"]  # 9 markers x 10 colours: 90 pairs
REQUIRED_COLUMNS = ["variant", "scheme", "data", "train_length"]


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        print(f"plot.py: error: {message} (see tools/plot.py --help)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def number(text, where):
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"{where}: expected a number, got '{text}'") from None


def read_csv_rows(path):
    try:
        with open(path, newline="") as f:
            return list(csv.reader(f))
    except OSError as e:
        raise UsageError(f"{path}: cannot read it: {e.strerror}") from None


def read_results(directory):
    """Each row of DIR/results.csv as a dict, with 'lengths': {L: loss (NaN: could not run)}."""
    path = directory / "results.csv"
    rows = read_csv_rows(path)
    if not rows:
        raise UsageError(f"{path}: empty (expected a header row and one row per variant)")
    header = rows[0]
    for column in REQUIRED_COLUMNS:
        if column not in header:
            raise UsageError(f"{path}: missing column '{column}' (a relpos ablate results.csv?)")
    length_columns = {c: int(c[len("loss_at_"):]) for c in header if c.startswith("loss_at_")}
    if not length_columns or len(rows) < 2:
        raise UsageError(f"{path}: expected loss_at_<L> columns and at least one variant row")
    results = []
    for line, cells in enumerate(rows[1:], start=2):
        if len(cells) != len(header):
            raise UsageError(f"{path}:{line}: {len(cells)} cells, the header has {len(header)}")
        row = dict(zip(header, cells))
        row["train_length"] = number(row["train_length"], f"{path}:{line}: train_length")
        row["lengths"] = {length: number(row[c], f"{path}:{line}: {c}")
                          for c, length in length_columns.items() if row[c] != ""}
        results.append(row)
    return results


def read_curves(path):
    """{"train_loss": {step: loss}, "val_loss": {step: loss}} from a metrics.jsonl; unreadable
    lines (a run cut off by a kill) are skipped, a resumed run's repeated steps replace the
    earlier ones."""
    train, val = {}, {}
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise UsageError(f"{path}: cannot read it: {e.strerror} (loss curves need each "
                         "variant's metrics.jsonl)") from None
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("step"), int):
            continue
        for key, curve in (("loss", train), ("val_loss", val)):
            if isinstance(entry.get(key), (int, float)):
                curve[entry["step"]] = entry[key]
    return {"train_loss": train, "val_loss": val}


def read_matrix(path):
    """A `relpos positions --csv` matrix: rows of floats, NaN where a cell is empty (masked)."""
    rows = read_csv_rows(path)
    if not rows or len(rows[0]) < 2 or rows[0][0] != "query" or len(rows) < 2:
        raise UsageError(f"{path}: expected a header 'query,k0,k1,...' and one row per query "
                         "(relpos positions --csv)")
    width = len(rows[0])
    matrix = []
    for line, cells in enumerate(rows[1:], start=2):
        if len(cells) != width:
            raise UsageError(f"{path}:{line}: {len(cells)} cells, the header has {width}")
        matrix.append([number(c, f"{path}:{line}") if c != "" else math.nan for c in cells[1:]])
    return matrix


def import_pyplot():
    try:
        import matplotlib
    except ImportError:
        print(f"plot.py: matplotlib is not installed for {sys.executable} "
              "(Debian: apt-get install python3-matplotlib)", file=sys.stderr)
        sys.exit(EXIT_NO_MATPLOTLIB)
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "relpos"  # the same SVG for the same data
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: smaller, searchable
    import matplotlib.pyplot as plt
    return plt


def save(fig, stem):
    """Writes stem.png and stem.svg, each through a .tmp file and a rename."""
    for extension in ("png", "svg"):
        path = stem.with_name(f"{stem.name}.{extension}")
        tmp = path.with_name(path.name + ".tmp")
        try:
            with open(tmp, "wb") as f:
                fig.savefig(f, format=extension, dpi=110, bbox_inches="tight",
                            metadata={"Date": None} if extension == "svg" else None)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            raise UsageError(f"{path}: cannot write it: {e.strerror}") from None
        print(f"wrote {path}", file=sys.stderr)


def series_styles(results):
    """variant name -> plot keywords: colour and marker by scheme (tab10 x MARKERS), and a
    different line style for each further variant of one scheme on one data set. Markers are
    hollow, so that points that coincide stay visible."""
    schemes = list(dict.fromkeys(r["scheme"] for r in results))
    seen = {}
    styles = {}
    for r in results:
        s = schemes.index(r["scheme"])
        repeat = seen.get((r["data"], r["scheme"]), 0)
        seen[(r["data"], r["scheme"])] = repeat + 1
        styles[r["variant"]] = dict(color=f"C{s % 10}", marker=MARKERS[s % len(MARKERS)],
                                    linestyle=LINESTYLES[(s // 10 + repeat) % len(LINESTYLES)],
                                    linewidth=1.4, markerfacecolor="none", markeredgewidth=1.3)
    return styles


def panels(plt, results, title):
    """A figure with one row of axes per data set, in order of first appearance, and the
    list of (data set, its axes, its result rows)."""
    data_sets = list(dict.fromkeys(r["data"] for r in results))
    fig, axes = plt.subplots(len(data_sets), 1, figsize=(9, 3.8 * len(data_sets)), squeeze=False,
                             layout="constrained")
    fig.suptitle(title)
    return fig, [(data, ax, [r for r in results if r["data"] == data])
                 for data, ax in zip(data_sets, axes[:, 0])]


def finish_panel(ax, data, xlabel, ys):
    """Log y where the values span more than two decades (a task solved to ~0.001 nats)."""
    positive = [y for y in ys if y > 0 and math.isfinite(y)]
    log_y = positive and max(positive) > 100 * min(positive)
    if log_y:
        ax.set_yscale("log")
    ax.set_title(f"data: {data}", fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("loss (nats/token" + (", log scale)" if log_y else ")"))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)


def plot_loss_curves(plt, directory, results, curves, name, title):
    fig, layout = panels(plt, results, title)
    try:
        styles = series_styles(results)
        for data, ax, rows in layout:
            ys = []
            for n, r in enumerate(rows):
                points = sorted(curves[r["variant"]][name].items())
                steps, losses = [p[0] for p in points], [p[1] for p in points]
                ys += losses
                every = max(1, len(points) // 8)  # markers staggered so that they overlap less
                ax.plot(steps, losses, label=r["variant"], markersize=5,
                        markevery=(n % every, every), **styles[r["variant"]])
            finish_panel(ax, data, "step", ys)
        save(fig, directory / name)
    finally:
        plt.close(fig)


def plot_extrapolation(plt, directory, results):
    fig, layout = panels(plt, results, "Loss vs evaluation length")
    try:
        styles = series_styles(results)
        for data, ax, rows in layout:
            ys, lengths = [], set()
            for r in rows:
                points = sorted(r["lengths"].items())
                lengths.update(p[0] for p in points)
                ys += [p[1] for p in points]
                missing = [str(x) for x, y in points if math.isnan(y)]
                label = r["variant"] + (f" (n/a at {', '.join(missing)})" if missing else "")
                ax.plot([p[0] for p in points], [p[1] for p in points], label=label,
                        markersize=7, **styles[r["variant"]])
            for length in sorted({int(r["train_length"]) for r in rows}):
                ax.axvline(length, color="black", linestyle=":", linewidth=1.0, zorder=0,
                           label=f"training length {length}")
            ax.set_xscale("log", base=2)
            ax.set_xticks(sorted(lengths), [str(length) for length in sorted(lengths)])
            ax.minorticks_off()
            ax.margins(x=0.06)
            finish_panel(ax, data, "evaluation length (log scale)", ys)
        save(fig, directory / "extrapolation")
    finally:
        plt.close(fig)


def plot_ablation(directory):
    if not directory.is_dir():
        raise UsageError(f"{directory}: not a folder (expected a relpos ablate out_dir)")
    results = read_results(directory)
    curves = {r["variant"]: read_curves(directory / r["variant"] / "metrics.jsonl")
              for r in results}
    plt = import_pyplot()
    plot_loss_curves(plt, directory, results, curves, "train_loss", "Training loss")
    plot_loss_curves(plt, directory, results, curves, "val_loss", "Validation loss")
    plot_extrapolation(plt, directory, results)


def plot_positions(csv_path, out, title):
    if out.suffix != ".png":
        raise UsageError(f"{out}: expected a file name ending in .png (the .svg goes beside it)")
    matrix = read_matrix(csv_path)
    plt = import_pyplot()
    from matplotlib.ticker import MaxNLocator
    rows, columns = len(matrix), len(matrix[0])
    side = min(10.0, max(4.0, 0.4 * max(rows, columns)))
    fig, ax = plt.subplots(figsize=(side + 1.5, side * max(rows / columns, 0.25)))
    try:
        cmap = plt.get_cmap("viridis").with_extremes(bad="0.88")  # masked cells: light grey
        image = ax.imshow(matrix, cmap=cmap, interpolation="nearest", aspect="equal")
        colorbar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
        for axis in (ax.xaxis, ax.yaxis, colorbar.ax.yaxis):
            axis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        if max(rows, columns) <= 32:  # room for the values in the cells
            fontsize = min(9.0, 150 / max(rows, columns))
            low, high = image.get_clim()
            for i, row in enumerate(matrix):
                for j, value in enumerate(row):
                    if math.isfinite(value):
                        dark = high == low or (value - low) / (high - low) < 0.6
                        ax.text(j, i, f"{value:g}", ha="center", va="center", fontsize=fontsize,
                                color="white" if dark else "black")
        ax.set_title(title or csv_path.name, fontsize=10)
        ax.set_xlabel("key j")
        ax.set_ylabel("query i")
        save(fig, out.with_suffix(""))
    finally:
        plt.close(fig)


def plot_runs(out, runs, title):
    if out.suffix != ".png":
        raise UsageError(f"{out}: expected a file name ending in .png (the .svg goes beside it)")
    labelled = []
    for run in runs:
        label, sep, directory = run.partition("=")
        if not sep or not label or not directory:
            raise UsageError(f"'{run}': expected LABEL=RUN_DIR")
        labelled.append((label, read_curves(Path(directory) / "metrics.jsonl")))
    plt = import_pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    try:
        ys = []
        for n, (label, curves) in enumerate(labelled):
            colour = f"C{n % 10}"
            for name, style, what in (("train_loss", "-", "train"), ("val_loss", "--", "val")):
                points = sorted(curves[name].items())
                ys += [p[1] for p in points]
                ax.plot([p[0] for p in points], [p[1] for p in points], linestyle=style,
                        color=colour, marker=MARKERS[n % len(MARKERS)], markersize=4,
                        fillstyle="none", label=f"{label} {what}")
        finish_panel(ax, "", "step", ys)
        ax.set_title(title or "Loss per step", fontsize=10)
        save(fig, out.with_suffix(""))
    finally:
        plt.close(fig)


def main():
    parser = Parser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    ablation = commands.add_parser("ablation", help="loss and extrapolation curves")
    ablation.add_argument("dir", type=Path, help="a relpos ablate out_dir")
    positions = commands.add_parser("positions", help="heatmap of relpos positions --csv")
    positions.add_argument("csv", type=Path)
    positions.add_argument("out", type=Path, help="OUT.png (OUT.svg is written beside it)")
    positions.add_argument("--title", default="")
    runs = commands.add_parser("runs", help="loss curves of several runs in one panel")
    runs.add_argument("out", type=Path, help="OUT.png (OUT.svg is written beside it)")
    runs.add_argument("runs", nargs="+", help="LABEL=RUN_DIR (a relpos train out_dir)")
    runs.add_argument("--title", default="")
    args = parser.parse_args()
    try:
        if args.command == "ablation":
            plot_ablation(args.dir)
        elif args.command == "runs":
            plot_runs(args.out, args.runs, args.title)
        else:
            plot_positions(args.csv, args.out, args.title)
    except UsageError as e:
        print(f"plot.py: error: {e}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


if __name__ == "__main__":
    main()
