#!/usr/bin/python3
"""Draw relpos's figures with matplotlib from the data files relpos writes.

Usage (Debian: apt-get install python3-matplotlib):
    tools/plot.py ablation DIR
        DIR/results.csv and each run's DIR/<run>/metrics.jsonl (a `relpos ablate` out_dir)
        -> DIR/train_loss, DIR/val_loss, DIR/extrapolation, where a task reports answer
        accuracy DIR/accuracy, with loss_mem_* columns DIR/memory (loss against memory
        length; a kNN size sweep: DIR/memory_knn, loss against the size) and with
        copy_gain_* columns DIR/copy_gain (the copy check's gain against distance), each
        .png and .svg; with several seeds per variant, lines are means and bands the 95%
        t interval of the mean (+- one standard deviation from a results.csv without _ci95
        columns); chance lines (dashed grey) on accuracy (1/num_symbols) and,
        on text, the uniform byte (ln 256 nats) where it is on the scale
    tools/plot.py positions CSV OUT.png [--title TEXT]
        a `relpos positions --csv` matrix -> a heatmap, OUT.png and OUT.svg
    tools/plot.py memory OUT.png LABEL=EVAL.json ... [--title TEXT]
        `relpos eval --mem-len` JSON files -> loss against memory length, one line per
        file and segment length, OUT.png and OUT.svg
    tools/plot.py knn-memory CSV OUT.png [--title TEXT]
        rows model,memory_size,loss (bench/knn_memory.py) -> evaluation loss against the kNN
        memory size S, one line per model; memory_size 0 (no memory) as a horizontal line
    tools/plot.py position-loss CSV OUT.png [--title TEXT]
        rows length,position,loss,tokens (`relpos eval --by-position`) -> the loss against
        the position in the window, one line per evaluation length (positions scored less
        than 1% as often as the most-scored one left out), OUT.png and OUT.svg
    tools/plot.py knn-gates OUT.png LABEL=RUN_DIR... [--title TEXT]
        the kNN gates ("knn_gate" in each metrics.jsonl) by step: a colour per head, a style per run
    tools/plot.py runs OUT.png LABEL=RUN_DIR... [--title TEXT]
        the training (solid) and validation (dashed) loss of each run's metrics.jsonl in one
        panel -> OUT.png and OUT.svg (e.g. one run in fp32 and one in bf16)

One panel per data set; each scheme keeps its colour and marker in every panel.
Bad input: one line on stderr, exit 2. matplotlib missing: exit 3. Every file is
written to a .tmp file first and renamed, so none is left half-written.
"""

import argparse
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree by relpos ablate
from plots.ablation import plot_ablation  # noqa: E402 (the package beside this script)
from plots.common import EXIT_USAGE, UsageError  # noqa: E402
from plots.memory import plot_knn_gates, plot_knn_memory, plot_memory  # noqa: E402
from plots.positions import plot_positions  # noqa: E402
from plots.runs import plot_position_loss, plot_runs  # noqa: E402


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        print(f"plot.py: error: {message} (see tools/plot.py --help)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def main():
    parser = Parser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    ablation = commands.add_parser("ablation", help="loss and extrapolation curves")
    ablation.add_argument("dir", type=Path, help="a relpos ablate out_dir")
    positions = commands.add_parser("positions", help="heatmap of relpos positions --csv")
    positions.add_argument("csv", type=Path)
    positions.add_argument("out", type=Path, help="OUT.png (OUT.svg is written beside it)")
    positions.add_argument("--title", default="")
    memory = commands.add_parser("memory", help="loss against memory length (eval --mem-len)")
    memory.add_argument("out", type=Path, help="OUT.png (OUT.svg is written beside it)")
    memory.add_argument("evals", nargs="+", help="LABEL=EVAL.json, one per model")
    memory.add_argument("--title", default="")
    knn = commands.add_parser("knn-memory", help="loss against the kNN memory size")
    knn.add_argument("csv", type=Path)
    knn.add_argument("out", type=Path, help="OUT.png (OUT.svg is written beside it)")
    knn.add_argument("--title", default="")
    by_position = commands.add_parser("position-loss",
                                      help="loss by position in the window (eval --by-position)")
    by_position.add_argument("csv", type=Path)
    by_position.add_argument("out", type=Path, help="OUT.png (OUT.svg is written beside it)")
    by_position.add_argument("--title", default="")
    gates = commands.add_parser("knn-gates", help="the kNN layer's gates against the step")
    gates.add_argument("out", type=Path, help="OUT.png (OUT.svg is written beside it)")
    gates.add_argument("runs", nargs="+", help="LABEL=RUN_DIR (a run with a kNN layer)")
    gates.add_argument("--title", default="")
    runs = commands.add_parser("runs", help="loss curves of several runs in one panel")
    runs.add_argument("out", type=Path, help="OUT.png (OUT.svg is written beside it)")
    runs.add_argument("runs", nargs="+", help="LABEL=RUN_DIR (a relpos train out_dir)")
    runs.add_argument("--title", default="")
    args = parser.parse_args()
    try:
        if args.command == "ablation":
            plot_ablation(args.dir)
        elif args.command == "memory":
            plot_memory(args.out, args.evals, args.title)
        elif args.command == "knn-memory":
            plot_knn_memory(args.csv, args.out, args.title)
        elif args.command == "position-loss":
            plot_position_loss(args.csv, args.out, args.title)
        elif args.command == "runs":
            plot_runs(args.out, args.runs, args.title)
        elif args.command == "knn-gates":
            plot_knn_gates(args.out, args.runs, args.title)
        else:
            plot_positions(args.csv, args.out, args.title)
    except UsageError as e:
        print(f"plot.py: error: {e}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


if __name__ == "__main__":
    main()
