"""The ablation figures' layout: one panel per data set, a colour and marker per scheme."""

import math

from plots.common import LINESTYLES, MARKERS, grid_and_legend


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


def band_caption(spread):
    """What a figure's bands are, for its title: the 95% t interval of the seed mean ("ci95"),
    or one standard deviation ("std", from a results.csv written before the intervals)."""
    if spread == "std":
        return "lines: seed means; bands: +- one standard deviation (an older results.csv)"
    return "lines: seed means; bands: 95% t interval of the mean"


def panels(plt, results, title, spread="ci95"):
    """A figure with one row of axes per data set, in order of first appearance, and the
    list of (data set, its axes, its result rows). With several seeds the title says what
    the bands are."""
    data_sets = list(dict.fromkeys(r["data"] for r in results))
    fig, axes = plt.subplots(len(data_sets), 1, figsize=(9, 3.8 * len(data_sets)), squeeze=False,
                             layout="constrained")
    seeded = any(len(r["runs"]) > 1 for r in results)
    fig.suptitle(f"{title}\n({band_caption(spread)})" if seeded else title)
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


def band(ax, xs, means, stds, style):
    """A shaded band of +- half-widths where they are known (several seeds)."""
    points = [(x, m, s) for x, m, s in zip(xs, means, stds) if math.isfinite(m) and
              math.isfinite(s)]
    if points:
        ax.fill_between([p[0] for p in points], [p[1] - p[2] for p in points],
                        [p[1] + p[2] for p in points], color=style["color"], alpha=0.15,
                        linewidth=0)
