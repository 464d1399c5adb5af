"""`plot.py ablation`: a `relpos ablate` out_dir's loss curves, extrapolation and accuracy."""

import math

from plots.ablation_memory import plot_copy_gain, plot_memory_curves
from plots.ablation_results import read_results
from plots.chance import draw_answer_chance, draw_byte_chance
from plots.common import UsageError, import_pyplot, read_curves, save
from plots.panels import band, finish_panel, panels, series_styles
from plots.statistics import mean_and_ci95


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
                points = sorted((step, *mean_and_ci95(v)) for step, v in by_step.items()
                                if len(v) == len(r["runs"]))
                steps, losses = [p[0] for p in points], [p[1] for p in points]
                ys += losses
                every = max(1, len(points) // 8)  # markers staggered so that they overlap less
                ax.plot(steps, losses, label=r["variant"], markersize=5,
                        markevery=(n % every, every), **styles[r["variant"]])
                band(ax, steps, losses, [p[2] for p in points], styles[r["variant"]])
            draw_byte_chance(ax, directory, rows, ys)
            finish_panel(ax, data, "step", ys)
        save(fig, directory / name)
    finally:
        plt.close(fig)


def plot_extrapolation(plt, directory, results, key="lengths", stem="extrapolation",
                       title="Loss vs evaluation length", ylabel=None):
    """A metric against the evaluation length: the loss (chance: a uniform byte, on text), or
    with ylabel, answer accuracy (chance: 1 / the task's number of symbols)."""
    fig, layout = panels(plt, results, title, results[0]["band"])
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
            if ylabel:
                draw_answer_chance(ax, directory, rows)
            else:
                draw_byte_chance(ax, directory, rows, ys)
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
    plot_memory_curves(plt, directory, results)
    plot_copy_gain(plt, directory, results)
