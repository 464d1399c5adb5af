#!/usr/bin/python3
"""Draw relpos's figures with matplotlib from the data files relpos writes.

Usage (Debian: apt-get install python3-matplotlib):
    tools/plot.py ablation DIR
        DIR/results.csv and each run's DIR/<run>/metrics.jsonl (a `relpos ablate` out_dir)
        -> DIR/train_loss, DIR/val_loss, DIR/extrapolation and, where a task reports
        answer accuracy, DIR/accuracy, each .png and .svg; with several seeds per
        variant, lines are means and bands the 95% t interval of the mean (extrapolation,
        accuracy) or +- one standard deviation (loss curves)
    tools/plot.py positions CSV OUT.png [--title TEXT]
        a `relpos positions --csv` matrix -> a heatmap, OUT.png and OUT.svg
    tools/plot.py memory OUT.png LABEL=EVAL.json ... [--title TEXT]
        `relpos eval --mem-len` JSON files -> loss against memory length, one line per
        file and segment length, OUT.png and OUT.svg
    tools/plot.py knn-memory CSV OUT.png [--title TEXT]
        rows model,memory_size,loss (bench/knn_memory.py) -> evaluation loss against the kNN
        memory size S, one line per model; memory_size 0 (no memory) as a horizontal line
    tools/plot.py position-loss CSV OUT.png [--title TEXT]
        rows length,position,loss,tokens (`relpos eval --by-position`) -> the loss against
        the position in the window, one line per evaluation length (positions scored less
        than 1% as often as the most-scored one left out), OUT.png and OUT.svg
    tools/plot.py knn-gates OUT.png LABEL=RUN_DIR... [--title TEXT]
        the kNN gates ("knn_gate" in each metrics.jsonl) by step: a colour per head, a style per run
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
import re
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


def metric_by_length(row, columns, where):
    """{L: value} from columns {name: L}; cells left empty (L not evaluated) are left out."""
    return {length: number(row[c], f"{where}: {c}") for c, length in columns.items()
            if row.get(c, "") != ""}


def read_results(directory):
    """Each row of DIR/results.csv as a dict, with 'lengths': {L: mean loss (NaN: could not
    run)}, 'lengths_band', 'accuracy' and 'accuracy_band' likewise (a band's half-width:
    the 95% t interval of the mean, or one std in an older file; NaN for one seed), and
    'runs': the run folders (the variant's own folder in a sweep without seeds)."""
    path = directory / "results.csv"
    rows = read_csv_rows(path)
    if not rows:
        raise UsageError(f"{path}: empty (expected a header row and one row per variant)")
    header = rows[0]
    for column in REQUIRED_COLUMNS:
        if column not in header:
            raise UsageError(f"{path}: missing column '{column}' (a relpos ablate results.csv?)")
    def columns(pattern):
        return {c: int(m.group(1)) for c in header if (m := re.fullmatch(pattern, c))}
    length_columns = columns(r"loss_at_(\d+)")
    if not length_columns or len(rows) < 2:
        raise UsageError(f"{path}: expected loss_at_<L> columns and at least one variant row")
    results = []
    for line, cells in enumerate(rows[1:], start=2):
        if len(cells) != len(header):
            raise UsageError(f"{path}:{line}: {len(cells)} cells, the header has {len(header)}")
        row = dict(zip(header, cells))
        row["train_length"] = number(row["train_length"], f"{path}:{line}: train_length")
        where = f"{path}:{line}"
        row["lengths"] = metric_by_length(row, length_columns, where)
        # Bands: the 95% t interval of the mean (_ci95), or +- one standard deviation in a
        # results.csv written before the intervals.
        spread = "ci95" if columns(r"loss_at_(\d+)_ci95") else "std"
        row["lengths_band"] = metric_by_length(row, columns(rf"loss_at_(\d+)_{spread}"), where)
        row["accuracy"] = metric_by_length(row, columns(r"accuracy_at_(\d+)"), where)
        row["accuracy_band"] = metric_by_length(row, columns(rf"accuracy_at_(\d+)_{spread}"),
                                                where)
        row["runs"] = row.get("runs", "").split() or [row["variant"]]
        results.append(row)
    return results


def read_curves(path):
    """{"train_loss": {step: loss}, "val_loss": {step: loss}, "knn_gate": {step: [g per head]}}
    from a metrics.jsonl; unreadable lines (a run cut off by a kill) are skipped, a resumed
    run's repeated steps replace the earlier ones."""
    train, val, gates = {}, {}, {}
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
        if isinstance(entry.get("knn_gate"), list):
            gates[entry["step"]] = entry["knn_gate"]
    return {"train_loss": train, "val_loss": val, "knn_gate": gates}


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


def require_png(out):
    if out.suffix != ".png":
        raise UsageError(f"{out}: expected a file name ending in .png (the .svg goes beside it)")


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
    grid_and_legend(ax)


def grid_and_legend(ax):
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)


def mean_and_std(values):
    """Mean and sample standard deviation (NaN for fewer than two values)."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, math.nan
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def band(ax, xs, means, stds, style):
    """A shaded band of +- one standard deviation where it is known (several seeds)."""
    points = [(x, m, s) for x, m, s in zip(xs, means, stds) if math.isfinite(m) and
              math.isfinite(s)]
    if points:
        ax.fill_between([p[0] for p in points], [p[1] - p[2] for p in points],
                        [p[1] + p[2] for p in points], color=style["color"], alpha=0.15,
                        linewidth=0)


def plot_loss_curves(plt, directory, results, curves, name, title):
    fig, layout = panels(plt, results, title)
    try:
        styles = series_styles(results)
        for data, ax, rows in layout:
            ys = []
            for n, r in enumerate(rows):
                by_step = {}  # the runs' losses at each step that every run logged
                for run in r["runs"]:
                    for step, loss in curves[run][name].items():
                        by_step.setdefault(step, []).append(loss)
                points = sorted((step, *mean_and_std(v)) for step, v in by_step.items()
                                if len(v) == len(r["runs"]))
                steps, losses = [p[0] for p in points], [p[1] for p in points]
                ys += losses
                every = max(1, len(points) // 8)  # markers staggered so that they overlap less
                ax.plot(steps, losses, label=r["variant"], markersize=5,
                        markevery=(n % every, every), **styles[r["variant"]])
                band(ax, steps, losses, [p[2] for p in points], styles[r["variant"]])
            finish_panel(ax, data, "step", ys)
        save(fig, directory / name)
    finally:
        plt.close(fig)


def plot_extrapolation(plt, directory, results, key="lengths", stem="extrapolation",
                       title="Loss vs evaluation length", ylabel=None):
    fig, layout = panels(plt, results, title)
    try:
        styles = series_styles(results)
        for data, ax, rows in layout:
            ys, lengths = [], set()
            for r in rows:
                points = sorted(r[key].items())
                lengths.update(p[0] for p in points)
                ys += [p[1] for p in points]
                missing = [str(x) for x, y in points if math.isnan(y)]
                label = r["variant"] + (f" (n/a at {', '.join(missing)})" if missing else "")
                ax.plot([p[0] for p in points], [p[1] for p in points], label=label,
                        markersize=7, **styles[r["variant"]])
                band(ax, [p[0] for p in points], [p[1] for p in points],
                     [r[key + "_band"].get(p[0], math.nan) for p in points], styles[r["variant"]])
            for length in sorted({int(r["train_length"]) for r in rows}):
                ax.axvline(length, color="black", linestyle=":", linewidth=1.0, zorder=0,
                           label=f"training length {length}")
            ax.set_xscale("log", base=2)
            ax.set_xticks(sorted(lengths), [str(length) for length in sorted(lengths)])
            ax.minorticks_off()
            ax.margins(x=0.06)
            finish_panel(ax, data, "evaluation length (log scale)", ys)
            if ylabel:
                ax.set_yscale("linear")
                ax.set_ylabel(ylabel)
        save(fig, directory / stem)
    finally:
        plt.close(fig)


def plot_ablation(directory):
    if not directory.is_dir():
        raise UsageError(f"{directory}: not a folder (expected a relpos ablate out_dir)")
    results = read_results(directory)
    curves = {run: read_curves(directory / run / "metrics.jsonl")
              for r in results for run in r["runs"]}
    plt = import_pyplot()
    plot_loss_curves(plt, directory, results, curves, "train_loss", "Training loss")
    plot_loss_curves(plt, directory, results, curves, "val_loss", "Validation loss")
    plot_extrapolation(plt, directory, results)
    on_tasks = [r for r in results if any(math.isfinite(a) for a in r["accuracy"].values())]
    if on_tasks:
        plot_extrapolation(plt, directory, on_tasks, "accuracy", "accuracy",
                           "Answer accuracy vs evaluation length", "next-token accuracy on answers")


def plot_positions(csv_path, out, title):
    require_png(out)
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


def read_memory_points(spec):
    """LABEL=FILE -> (label, {segment length: [(mem_len, loss)] sorted})."""
    label, sep, path = spec.partition("=")
    if not sep or not label or not path:
        raise UsageError(f"'{spec}': expected LABEL=EVAL.json")
    try:
        with open(path) as f:
            results = json.load(f)["results"]
    except OSError as e:
        raise UsageError(f"{path}: cannot read it: {e.strerror}") from None
    except (ValueError, KeyError, TypeError):
        raise UsageError(f"{path}: not the JSON of relpos eval (no 'results' list)") from None
    curves = {}
    for n, r in enumerate(results):
        if not isinstance(r, dict) or "mem_len" not in r:
            raise UsageError(f"{path}: results[{n}] has no mem_len (run relpos eval --mem-len)")
        curves.setdefault(int(r["length"]), []).append(
            (int(r["mem_len"]), number(str(r["loss"]), f"{path}: results[{n}].loss")))
    return label, {length: sorted(points) for length, points in curves.items()}


def plot_memory(out, specs, title):
    require_png(out)
    series = [read_memory_points(spec) for spec in specs]
    plt = import_pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.2), layout="constrained")
    try:
        for s, (label, curves) in enumerate(series):
            for repeat, (length, points) in enumerate(sorted(curves.items())):
                ax.plot([p[0] for p in points], [p[1] for p in points],
                        label=f"{label}, segment {length}", color=f"C{s % 10}",
                        marker=MARKERS[s % len(MARKERS)],
                        linestyle=LINESTYLES[repeat % len(LINESTYLES)], linewidth=1.4,
                        markerfacecolor="none", markeredgewidth=1.3)
        ax.set_title(title or "Validation loss against memory length", fontsize=10)
        ax.set_xlabel("memory length (cached hidden states per layer)")
        ax.set_ylabel("loss (nats/token)")
        grid_and_legend(ax)
        save(fig, out.with_suffix(""))
    finally:
        plt.close(fig)


def read_knn_rows(path):
    """model -> {memory size: loss} from a CSV with the header model,memory_size,loss."""
    rows = read_csv_rows(path)
    if not rows or rows[0] != ["model", "memory_size", "loss"]:
        raise UsageError(f"{path}: expected a header 'model,memory_size,loss'")
    series = {}
    for n, row in enumerate(rows[1:], start=2):
        if len(row) != 3:
            raise UsageError(f"{path}:{n}: {len(row)} cells, the header has 3")
        size = number(row[1], f"{path}:{n}: memory_size")
        if size < 0 or size != int(size):
            raise UsageError(f"{path}:{n}: memory_size must be a whole number >= 0, got {row[1]}")
        series.setdefault(row[0], {})[int(size)] = number(row[2], f"{path}:{n}: loss")
    if not series:
        raise UsageError(f"{path}: no rows")
    return series


def plot_knn_memory(csv_path, out, title):
    require_png(out)
    series = read_knn_rows(csv_path)
    plt = import_pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.2), layout="constrained")
    try:
        sizes = set()
        for n, (model, points) in enumerate(series.items()):
            style = dict(color=f"C{n % 10}", marker=MARKERS[n % len(MARKERS)], linewidth=1.4,
                         markerfacecolor="none", markeredgewidth=1.3, markersize=7)
            curve = sorted((s, loss) for s, loss in points.items() if s > 0)
            sizes.update(s for s, _ in curve)
            if curve:
                ax.plot([s for s, _ in curve], [loss for _, loss in curve], label=model, **style)
            if 0 in points:
                ax.axhline(points[0], color=style["color"], linestyle="--", linewidth=1.0,
                           label=f"{model}: no memory")
        if sizes:
            ax.set_xscale("log", base=2)
            ax.set_xticks(sorted(sizes), [str(s) for s in sorted(sizes)])
            ax.minorticks_off()
        ax.set_title(title or csv_path.name, fontsize=10)
        ax.set_xlabel("kNN memory size S (pairs per stream, log scale)")
        ax.set_ylabel("evaluation loss (nats/byte)")
        grid_and_legend(ax)
        save(fig, out.with_suffix(""))
    finally:
        plt.close(fig)


def run_dirs(runs):
    """[(LABEL, Path(RUN_DIR))] from LABEL=RUN_DIR arguments."""
    out = [run.partition("=") for run in runs]
    for run, (label, sep, directory) in zip(runs, out):
        if not sep or not label or not directory:
            raise UsageError(f"'{run}': expected LABEL=RUN_DIR")
    return [(label, Path(directory)) for label, _, directory in out]


def plot_runs(out, runs, title):
    require_png(out)
    labelled = [(label, read_curves(d / "metrics.jsonl")) for label, d in run_dirs(runs)]
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


def plot_knn_gates(out, runs, title):
    require_png(out)
    labelled = []
    for label, directory in run_dirs(runs):
        path = directory / "metrics.jsonl"
        gates = read_curves(path)["knn_gate"]
        if not gates:
            raise UsageError(f"{path}: no knn_gate entries (a run with a kNN layer logs them)")
        labelled.append((label, sorted(gates.items())))
    plt = import_pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2), layout="constrained")
    try:
        for n, (label, points) in enumerate(labelled):
            for head in range(len(points[0][1])):
                ax.plot([p[0] for p in points], [p[1][head] for p in points], color=f"C{head % 10}",
                        linestyle=LINESTYLES[n % len(LINESTYLES)], label=f"{label} head {head}")
        ax.axhline(0.5, color="grey", linestyle=":", linewidth=0.8)
        ax.set_title(title or "kNN layer gates g = sigmoid(b) (memory weight per head)", fontsize=10)
        ax.set_xlabel("step")
        ax.set_ylabel("gate g")
        grid_and_legend(ax)
        save(fig, out.with_suffix(""))
    finally:
        plt.close(fig)


def plot_position_loss(csv_path, out, title):
    require_png(out)
    rows = read_csv_rows(csv_path)
    if not rows or rows[0] != ["length", "position", "loss", "tokens"]:
        raise UsageError(f"{csv_path}: expected the header length,position,loss,tokens")
    curves = {}
    for line, cells in enumerate(rows[1:], start=2):
        if len(cells) != 4:
            raise UsageError(f"{csv_path}:{line}: {len(cells)} cells, the header has 4")
        where = f"{csv_path}:{line}"
        curves.setdefault(int(number(cells[0], where)), []).append(
            (int(number(cells[1], where)), number(cells[2], where), number(cells[3], where)))
    # Under --stride only the first window scores the early positions, one token each:
    # positions with under 1% of the length's most-scored position's tokens are left out.
    for length, points in curves.items():
        most = max(p[2] for p in points)
        curves[length] = [p for p in points if p[2] >= most / 100]
    plt = import_pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.2), layout="constrained")
    try:
        for s, (length, points) in enumerate(sorted(curves.items())):
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], label=f"length {length}",
                    color=f"C{s % 10}", linewidth=1.0)
        ax.set_title(title or "Validation loss by position in the window (positions scored "
                     "< 1% as often as the most-scored one left out)", fontsize=10)
        ax.set_xlabel("position in the window (tokens of context before the scored one)")
        ax.set_ylabel("loss (nats/token)")
        grid_and_legend(ax)
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
    memory = commands.add_parser("memory", help="loss against memory length (eval --mem-len)")
    memory.add_argument("out", type=Path, help="OUT.png (OUT.svg is written beside it)")
    memory.add_argument("evals", nargs="+", help="LABEL=EVAL.json, one per model")
    memory.add_argument("--title", default="")
    knn = commands.add_parser("knn-memory", help="loss against the kNN memory size")
    knn.add_argument("csv", type=Path)
    knn.add_argument("out", type=Path, help="OUT.png (OUT.svg is written beside it)")
    knn.add_argument("--title", default="")
    by_position = commands.add_parser("position-loss",
                                      help="loss by position in the window (eval --by-position)")
    by_position.add_argument("csv", type=Path)
    by_position.add_argument("out", type=Path, help="OUT.png (OUT.svg is written beside it)")
    by_position.add_argument("--title", default="")
    gates = commands.add_parser("knn-gates", help="the kNN layer's gates against the step")
    gates.add_argument("out", type=Path, help="OUT.png (OUT.svg is written beside it)")
    gates.add_argument("runs", nargs="+", help="LABEL=RUN_DIR (a run with a kNN layer)")
    gates.add_argument("--title", default="")
    runs = commands.add_parser("runs", help="loss curves of several runs in one panel")
    runs.add_argument("out", type=Path, help="OUT.png (OUT.svg is written beside it)")
    runs.add_argument("runs", nargs="+", help="LABEL=RUN_DIR (a relpos train out_dir)")
    runs.add_argument("--title", default="")
    args = parser.parse_args()
    try:
        if args.command == "ablation":
            plot_ablation(args.dir)
        elif args.command == "memory":
            plot_memory(args.out, args.evals, args.title)
        elif args.command == "knn-memory":
            plot_knn_memory(args.csv, args.out, args.title)
        elif args.command == "position-loss":
            plot_position_loss(args.csv, args.out, args.title)
        elif args.command == "runs":
            plot_runs(args.out, args.runs, args.title)
        elif args.command == "knn-gates":
            plot_knn_gates(args.out, args.runs, args.title)
        else:
            plot_positions(args.csv, args.out, args.title)
    except UsageError as e:
        print(f"plot.py: error: {e}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


if __name__ == "__main__":
    main()
