"""Reading relpos's data files, the figures' shared styles and saving PNG and SVG."""

import csv
import json
import os
import sys
from pathlib import Path

EXIT_USAGE = 2
EXIT_NO_MATPLOTLIB = 3
LINESTYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<"]  # 9 markers x 10 colours: 90 pairs


class UsageError(Exception):
    pass



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


def grid_and_legend(ax):
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)



def run_dirs(runs):
    """[(LABEL, Path(RUN_DIR))] from LABEL=RUN_DIR arguments."""
    out = [run.partition("=") for run in runs]
    for run, (label, sep, directory) in zip(runs, out):
        if not sep or not label or not directory:
            raise UsageError(f"'{run}': expected LABEL=RUN_DIR")
    return [(label, Path(directory)) for label, _, directory in out]
