"""`plot.py ablation`'s long-context figures: the loss against the memory length
(eval_mem_lengths, eval_knn_sizes) and the in-context copy check's gain against the
distance (eval_copy), seed means with their bands."""

import math

from plots.common import LINESTYLES, save
from plots.panels import band, finish_panel, panels, series_styles


def draw_series(ax, variant, style, series, label):
    """One line per {key: [(x, mean, band half-width)]}, a line style each, in the order of
    the keys (whole numbers or None, None first), named variant + label(key)."""
    order = sorted(series, key=lambda k: tuple(-1 if v is None else v for v in k))
    for repeat, key in enumerate(order):
        points = sorted(series[key])
        line = dict(style, linestyle=LINESTYLES[repeat % len(LINESTYLES)])
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        ax.plot(xs, ys, label=variant + label(*key), markersize=7, **line)
        band(ax, xs, ys, [p[2] for p in points], line)


def variant_styles(rows):
    """series_styles' markers with a colour per variant (the variants of these figures are
    often of one scheme), the line style left to each variant's series."""
    styles = series_styles(rows)
    return {r["variant"]: dict(styles[r["variant"]], color=f"C{n % 10}")
            for n, r in enumerate(rows)}


def base2_axis(ax, xs):
    """A log-2 x axis with a tick at each value; symlog where 0 is among them."""
    positive = sorted(x for x in xs if x > 0)
    if 0 in xs:
        ax.set_xscale("symlog", base=2, linthresh=positive[0] if positive else 1)
    elif positive:
        ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(xs), [str(x) for x in sorted(xs)])
    ax.minorticks_off()
    ax.margins(x=0.06)


def memory_series(r):
    """The row's memory points in two: {(S,): [(M, mean, band)]}, a line against M per kNN
    size (None: no kNN layer), and {(): [(S, mean, band)]}, the kNN sizes at M = 0, where
    eval_knn_sizes gave two or more sizes scored only at M = 0 (these then leave the
    first)."""
    by_mem, by_size = {}, {}
    for (mem, knn), value in r["memory"].items():
        point = (value, r["memory_band"].get((mem, knn), math.nan))
        by_mem.setdefault((knn,), []).append((mem, *point))
    sweep = [key for key, points in by_mem.items()
             if key[0] is not None and [p[0] for p in points] == [0]]
    if len(sweep) >= 2:  # every kNN size's point at M = 0, the trained size's included
        by_size[()] = [(key[0], *p[1:]) for key, points in by_mem.items() if key[0] is not None
                       for p in points if p[0] == 0]
        for key in sweep:
            del by_mem[key]
    return by_mem, by_size


def plot_lines(plt, directory, rows_with, stem, title, xlabel, series_of, label, ylabel=None):
    """A figure of lines against a log-2 x axis, one panel per data set: series_of(row) ->
    {key: [(x, mean, band)]}, each named variant + label(*key)."""
    fig, layout = panels(plt, rows_with, title, rows_with[0]["band"])
    try:
        styles = variant_styles(rows_with)
        for data, ax, rows in layout:
            xs, ys = set(), []
            for r in rows:
                series = series_of(r)
                xs.update(p[0] for points in series.values() for p in points)
                ys += [p[1] for points in series.values() for p in points]
                draw_series(ax, r["variant"], styles[r["variant"]], series, label)
            if ylabel:  # the copy gain: a line at zero, no log y axis
                ax.axhline(0, color="black", linestyle=":", linewidth=1.0, zorder=0,
                           label="no gain (0)")
            base2_axis(ax, xs)
            finish_panel(ax, data, xlabel, [] if ylabel else ys)
            if ylabel:
                ax.set_ylabel(ylabel)
        save(fig, directory / stem)
    finally:
        plt.close(fig)


def plot_memory_curves(plt, directory, results):
    """memory.png/svg: loss_mem_<M>[_knn_<S>] against M, a line per variant and kNN size,
    and memory_knn.png/svg: loss_mem_0_knn_<S> against S where a variant has a kNN size
    sweep."""
    rows_with = [r for r in results if r["memory"]]
    if rows_with:
        plot_lines(plt, directory, rows_with, "memory", "Loss vs memory length",
                   "memory length M (cached states per layer, log scale)",
                   lambda r: memory_series(r)[0],
                   lambda knn: "" if knn is None else f", kNN memory {knn}")
    swept = [r for r in rows_with if memory_series(r)[1]]
    if swept:
        plot_lines(plt, directory, swept, "memory_knn", "Loss vs kNN memory size (M = 0)",
                   "kNN memory size S (pairs per stream, log scale)",
                   lambda r: memory_series(r)[1], lambda: "")


def copy_label(mem, knn):
    """How a copy check was read: one window, or segments with memory M (and kNN size S)."""
    return ((", one window" if mem is None else f", segments, memory {mem}") +
            ("" if knn is None else f", kNN memory {knn}"))


def copy_series(r):
    """{(M, S): [(D, mean, band)]}: a line against the distance per way of reading."""
    series = {}
    for (distance, mem, knn), value in r["copy"].items():
        series.setdefault((mem, knn), []).append(
            (distance, value, r["copy_band"].get((distance, mem, knn), math.nan)))
    return series


def plot_copy_gain(plt, directory, results):
    """copy_gain.png/svg: copy_gain_<D>[_mem_<M>[_knn_<S>]] against D, a line per variant and
    way of reading (one window, or segments with memory M), with a line at zero gain."""
    rows_with = [r for r in results if r["copy"]]
    if rows_with:
        plot_lines(plt, directory, rows_with, "copy_gain",
                   "In-context copy check: gain vs distance",
                   "distance D to the first occurrence (tokens, log scale)", copy_series,
                   copy_label, "gain: control loss - repeat loss (nats/token)")
