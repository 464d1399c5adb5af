"""Chance lines of the ablation figures: what a model scores that knows only the vocabulary.
Dashed grey, labelled "chance"."""

import math
import re

# The data.source values of the synthetic tasks (data/tasks.h). Every one scores answers
# drawn uniformly from the task's first num_symbols symbols (data/tasks.cpp, random_symbol):
# answer accuracy by chance is 1 / num_symbols.
TASKS = ("copy", "reverse", "offset_lookup", "associative_recall")
DEFAULT_NUM_SYMBOLS = 16  # data/tasks.h, TaskParams::num_symbols: a run without config.yaml
UNIFORM_BYTE_NATS = math.log(256)  # 8 bits/byte: a uniform guess over the 256 byte tokens
STYLE = dict(color="grey", linestyle="--", linewidth=1.0, zorder=0)


def run_config(directory, row):
    """The text of the row's first run's config.yaml ("" without one: a folder by hand)."""
    try:
        return (directory / row["runs"][0] / "config.yaml").read_text()
    except OSError:
        return ""


def answer_chances(directory, rows):
    """The answer accuracies by chance (1 / num_symbols) of the task rows, sorted."""
    chances = set()
    for r in rows:
        if r["data"] in TASKS:
            found = re.search(r"^\s*num_symbols:\s*(\d+)\s*$", run_config(directory, r), re.M)
            chances.add(1 / (int(found.group(1)) if found else DEFAULT_NUM_SYMBOLS))
    return sorted(chances)


def on_bytes(directory, rows):
    """Whether every row is text read with the byte tokenizer (config.yaml's
    data.tokenizer.kind; a folder by hand without config.yaml: bytes)."""
    for r in rows:
        kind = re.search(r"^\s*tokenizer:\s*\n\s*kind:\s*(\S+)", run_config(directory, r), re.M)
        if r["data"] in TASKS or (kind and kind.group(1) != "bytes"):
            return False
    return True


def draw_answer_chance(ax, directory, rows):
    for chance in answer_chances(directory, rows):
        ax.axhline(chance, label=f"chance (1/{round(1 / chance)})", **STYLE)


def draw_byte_chance(ax, directory, rows, ys):
    """ln 256 nats on a text panel where it does not flatten it (at most a quarter of the
    data's span above its top), else a legend entry saying that it is off the scale."""
    finite = [y for y in ys if math.isfinite(y)]
    if not finite or not on_bytes(directory, rows):
        return
    low, high = min(finite), max(finite)
    if UNIFORM_BYTE_NATS <= high + 0.25 * max(high - low, 0.05 * high):
        ax.axhline(UNIFORM_BYTE_NATS, label="chance (uniform byte: ln 256 = 5.55 nats)", **STYLE)
    else:
        ax.plot([], [], label="chance (uniform byte, 5.55 nats): off the scale", **STYLE)
