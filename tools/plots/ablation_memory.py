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


def plot_memory_curves(plt, directory, results):
    """memory.png/svg: loss_mem_<M>[_knn_<S>] against M, a line per variant and kNN size."""
    rows_with = [r for r in results if r["memory"]]
    if not rows_with:
        return
    fig, layout = panels(plt, rows_with, "Loss vs memory length", rows_with[0]["band"])
    try:
        styles = variant_styles(rows_with)
        for data, ax, rows in layout:
            ys, xs = [], set()
            for r in rows:
                series = {}
                for (mem, knn), value in r["memory"].items():
                    series.setdefault((knn,), []).append(
                        (mem, value, r["memory_band"].get((mem, knn), math.nan)))
                    xs.add(mem)
                    ys.append(value)
                draw_series(ax, r["variant"], styles[r["variant"]], series,
                            lambda knn: "" if knn is None else f", kNN memory {knn}")
            base2_axis(ax, xs)
            finish_panel(ax, data, "memory length M (cached states per layer, log scale)", ys)
        save(fig, directory / "memory")
    finally:
        plt.close(fig)


def copy_label(mem, knn):
    """How a copy check was read: one window, or segments with memory M (and kNN size S)."""
    return ((", one window" if mem is None else f", segments, memory {mem}") +
            ("" if knn is None else f", kNN memory {knn}"))


def plot_copy_gain(plt, directory, results):
    """copy_gain.png/svg: copy_gain_<D>[_mem_<M>[_knn_<S>]] against D, a line per variant and
    way of reading (one window, or segments with memory M), with a line at zero gain."""
    rows_with = [r for r in results if r["copy"]]
    if not rows_with:
        return
    fig, layout = panels(plt, rows_with, "In-context copy check: gain vs distance",
                         rows_with[0]["band"])
    try:
        styles = variant_styles(rows_with)
        for data, ax, rows in layout:
            xs = set()
            for r in rows:
                series = {}
                for (distance, mem, knn), value in r["copy"].items():
                    series.setdefault((mem, knn), []).append(
                        (distance, value, r["copy_band"].get((distance, mem, knn), math.nan)))
                    xs.add(distance)
                draw_series(ax, r["variant"], styles[r["variant"]], series, copy_label)
            ax.axhline(0, color="black", linestyle=":", linewidth=1.0, zorder=0,
                       label="no gain (0)")
            base2_axis(ax, xs)
            finish_panel(ax, data, "distance D to the first occurrence (tokens, log scale)", [])
            ax.set_ylabel("gain: control loss - repeat loss (nats/token)")
        save(fig, directory / "copy_gain")
    finally:
        plt.close(fig)
