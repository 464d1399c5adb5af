"""Reading a `relpos ablate` out_dir's results.csv."""

import re

from plots.common import UsageError, number, read_csv_rows

REQUIRED_COLUMNS = ["variant", "scheme", "data", "train_length"]


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
