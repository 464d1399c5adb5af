"""`plot.py positions`: a `relpos positions --csv` matrix as a heatmap."""

import math

from plots.common import UsageError, import_pyplot, number, read_csv_rows, require_png, save


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
