#!/usr/bin/python3
"""Data-parallel scaling on one machine: tokens/s of 1 process x T threads against
N MPI ranks x T/N threads, and the gradient all-reduce time per step, for the model of
bench/results/cpu.md (d_model 256, 4 layers, T5, L=128, 8192 tokens per step).

Usage: bench/mpi_scaling.py [--relpos build/train/relpos] [--ranks 2] [--threads 2]
                            [--steps 12] [--scheme t5]
Prints a markdown table. Standard library only; needs relpos built with MPI and mpirun.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = ["model.vocab=256", "model.d_model=256", "model.n_layers=4", "model.n_heads=4",
         "model.d_ff=1024", "model.dropout=0", "model.norm=layernorm", "model.tie_embeddings=true",
         "model.position.num_buckets=32", "model.position.max_distance=128",
         "data.source=corpus", "data.seq_len=128", "data.batch_size=64", "optim.name=adamw",
         "optim.lr=0.001", "optim.grad_clip=1.0", "schedule.name=constant", "train.log_every=1",
         "train.eval_batches=1"]


def run(relpos, ranks, threads, steps, scheme, out):
    args = [relpos, "train", os.path.join(ROOT, "configs/quickstart.yaml")] + MODEL + [
        f"model.position.scheme={scheme}", f"train.steps={steps}", f"train.threads={threads}",
        f"train.eval_every={steps}", f"train.checkpoint_every={steps}", f"train.out_dir={out}"]
    if ranks > 1:
        args = ["mpirun", "-np", str(ranks), "--oversubscribe", "--allow-run-as-root",
                "--bind-to", "none"] + args
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    records = [json.loads(line) for line in open(os.path.join(out, "metrics.jsonl"))]
    steps_ = [r for r in records if "tokens_per_s" in r][2:]  # 2 warm-up steps left out
    return (statistics.median(r["tokens_per_s"] for r in steps_),
            statistics.median(r.get("all_reduce_s_per_step", 0.0) for r in steps_))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--relpos", default=os.path.join(ROOT, "build/train/relpos"))
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--threads", type=int, default=2, help="threads of the 1-process run")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--scheme", default="t5")
    o = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        one, _ = run(o.relpos, 1, o.threads, o.steps, o.scheme, os.path.join(work, "one"))
        many, reduce_s = run(o.relpos, o.ranks, max(1, o.threads // o.ranks), o.steps, o.scheme,
                             os.path.join(work, "many"))
    print(f"| run | tokens/s (median step) | all-reduce s/step |\n|---|---|---|\n"
          f"| 1 process x {o.threads} threads | {one:.0f} | - |\n"
          f"| {o.ranks} ranks x {max(1, o.threads // o.ranks)} thread(s) | {many:.0f} | "
          f"{reduce_s:.4f} |\n\nscaling efficiency (ranks / process): {many / one:.2f}")


if __name__ == "__main__":
    main()
