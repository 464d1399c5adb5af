"""`plot.py runs` and `position-loss`: loss curves of single runs, and the loss by position
in the window."""

from plots.common import (MARKERS, UsageError, grid_and_legend, import_pyplot, number,
                          read_csv_rows, read_curves, require_png, run_dirs, save)
from plots.panels import finish_panel


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
