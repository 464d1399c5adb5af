#!/usr/bin/python3
"""Evaluation loss against the kNN memory size S (docs/results/long-context.md, "kNN memory").

Trains configs/knn_memory.yaml twice on the bundled corpus read as contiguous streams:
once with its kNN layer (model.knn_memory.size = --train-size) and once without one
(model.knn_memory.layer = -1), then evaluates both on the validation text read as the
same streams, the kNN model with a memory of each size in --sizes (0: an empty memory,
the layer keeps its local attention). Writes OUT/knn_memory.csv (model,memory_size,loss)
and, through tools/plot.py, OUT/knn_memory.png and .svg.

    bench/knn_memory.py --relpos build/train/relpos --out runs/knn_bench
"""

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(command):
    print("+", " ".join(command), file=sys.stderr, flush=True)
    subprocess.run(command, check=True)


def train(args, out, overrides):
    run([args.relpos, "train", str(ROOT / "configs" / "knn_memory.yaml"),
         f"train.steps={args.steps}", f"train.threads={args.threads}", f"train.out_dir={out}",
         f"model.knn_memory.size={args.train_size}", *overrides])
    return out / "checkpoints" / f"ckpt_{args.steps:08d}.h5"


def evaluate(args, checkpoint, extra):
    result = checkpoint.with_suffix(".knn.json")
    run([args.relpos, "eval", str(checkpoint), "--mem-len", "0", "--batches",
         str(args.segments), "--json", str(result), *extra])
    return json.loads(result.read_text())["results"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--relpos", default=str(ROOT / "build" / "train" / "relpos"))
    parser.add_argument("--out", type=Path, default=Path("runs/knn_bench"))
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--train-size", type=int, default=1024)
    parser.add_argument("--sizes", default="0,64,256,1024,4096")
    parser.add_argument("--segments", type=int, default=64, help="segments per stream")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    knn = train(args, args.out / "knn", [])
    plain = train(args, args.out / "plain", ["model.knn_memory.layer=-1"])
    rows = [(f"kNN layer, trained with S={args.train_size}", p["knn_size"], p["loss"])
            for p in evaluate(args, knn, ["--knn-size", args.sizes])]
    rows += [("no kNN layer (random windows)", 0, p["loss"]) for p in evaluate(args, plain, [])]

    table = args.out / "knn_memory.csv"
    with open(table, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["model", "memory_size", "loss"])
        writer.writerows(rows)
    print(f"wrote {table}", file=sys.stderr)
    run(["/usr/bin/python3", str(ROOT / "tools" / "plot.py"), "knn-memory", str(table),
         str(args.out / "knn_memory.png"), "--title",
         f"kNN memory: validation loss vs memory size ({args.steps} steps)"])


if __name__ == "__main__":
    main()
