"""Reading a `relpos ablate` out_dir's results.csv."""

import re

from plots.common import UsageError, number, read_csv_rows

REQUIRED_COLUMNS = ["variant", "scheme", "data", "train_length"]


# Metric columns: name pattern -> the key of a point (its groups as whole numbers, a missing
# optional group as None). Each may have _std, _n and _ci95 columns beside it.
METRICS = {
    "lengths": r"loss_at_(\d+)",  # key: L
    "accuracy": r"accuracy_at_(\d+)",  # key: L
    "memory": r"loss_mem_(\d+)(?:_knn_(\d+))?",  # (M, S) (eval_mem_lengths, eval_knn_sizes)
    "copy": r"copy_gain_(\d+)(?:_mem_(\d+)(?:_knn_(\d+))?)?",  # (D, M, S) (eval_copy)
}


def metric_points(row, header, pattern, spread, where):
    """({key: value}, {key: band half-width}) of one metric; cells left empty (a point not
    evaluated) are left out, NaN (could not run) kept."""
    values, bands = {}, {}
    for column in header:
        match = re.fullmatch(pattern, column)
        if not match or row[column] == "":
            continue
        groups = tuple(None if g is None else int(g) for g in match.groups())
        key = groups[0] if len(groups) == 1 else groups
        values[key] = number(row[column], f"{where}: {column}")
        band = f"{column}_{spread}"
        if row.get(band, "") != "":
            bands[key] = number(row[band], f"{where}: {band}")
    return values, bands


def read_results(directory):
    """Each row of DIR/results.csv as a dict, with, for each metric of METRICS, its points
    (e.g. 'lengths': {L: mean loss (NaN: could not run)}) and 'X_band' (a band's half-width:
    the 95% t interval of the mean, or one std in an older file; NaN for one seed), 'band'
    ("ci95" or "std") and 'runs': the run folders (the variant's own folder in a sweep
    without seeds)."""
    path = directory / "results.csv"
    rows = read_csv_rows(path)
    if not rows:
        raise UsageError(f"{path}: empty (expected a header row and one row per variant)")
    header = rows[0]
    for column in REQUIRED_COLUMNS:
        if column not in header:
            raise UsageError(f"{path}: missing column '{column}' (a relpos ablate results.csv?)")
    if not any(re.fullmatch(METRICS["lengths"], c) for c in header) or len(rows) < 2:
        raise UsageError(f"{path}: expected loss_at_<L> columns and at least one variant row")
    # Bands: the 95% t interval of the mean (_ci95), or +- one standard deviation in a
    # results.csv written before the intervals.
    spread = "ci95" if any(re.fullmatch(r"loss_at_(\d+)_ci95", c) for c in header) else "std"
    results = []
    for line, cells in enumerate(rows[1:], start=2):
        if len(cells) != len(header):
            raise UsageError(f"{path}:{line}: {len(cells)} cells, the header has {len(header)}")
        row = dict(zip(header, cells))
        where = f"{path}:{line}"
        row["train_length"] = number(row["train_length"], f"{where}: train_length")
        for name, pattern in METRICS.items():
            row[name], row[name + "_band"] = metric_points(row, header, pattern, spread, where)
        row["band"] = spread
        row["runs"] = row.get("runs", "").split() or [row["variant"]]
        results.append(row)
    return results
