"""`plot.py memory`, `knn-memory` and `knn-gates`: loss against a memory's length or size,
and the kNN layer's gates by step."""

import json

from plots.common import (LINESTYLES, MARKERS, UsageError, grid_and_legend, import_pyplot,
                          number, read_csv_rows, read_curves, require_png, run_dirs, save)


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
