#!/usr/bin/env bash
# The RoPE context-extension study of docs/results/rope-extension.md:
#  1. RoPE trained at L = 64 (the model, data and schedule of configs/ablate_positions.yaml),
#     one run per seed;
#  2. each checkpoint evaluated at 1x-16x with every rope_scaling kind (relpos eval --set):
#     factor 4 and original_len 64 for linear, ntk and yarn; dynamic_ntk with factor 1
#     (its scale is the length ratio n / 64 itself);
#  3. 100 fine-tuning steps at 4L = 256 from each checkpoint's weights (relpos train
#     --init-from: fresh optimizer, the same 2048 tokens a step), plain and with linear
#     and yarn, each evaluated at 64 and 256.
# Eval JSONs go to OUT/evals/; tools/rope_extension_table.py OUT/evals prints the tables.
# Finished steps are skipped when rerun.
#   tools/rope_extension_study.sh [RELPOS] [OUT]    (build/train/relpos, runs/rope_extension)
# SEEDS="0 1 2" (default) chooses the seeds; EVAL_BATCHES=N reads N batches of 32 per
# length (default 8; 0: the whole validation split). STUDY_RUNS=DIR skips step 1 and reads
# DIR/seed-<seed>/checkpoints/ckpt_00006000.h5 instead: the RoPE models of a study part
# (part extensions' rope-dynamic_ntk, docs/results/study.md), trained 6,000 steps.
set -euo pipefail
relpos=${1:-build/train/relpos}
out=${2:-runs/rope_extension}
read -r -a seeds <<<"${SEEDS:-0 1 2}"
batches=${EVAL_BATCHES:-8}
if [[ ! $batches =~ ^[0-9]{1,6}$ ]]; then
  echo "tools/rope_extension_study.sh: EVAL_BATCHES='$batches' is not a number of batches (0: the whole split)" >&2
  exit 2
fi
mkdir -p "$out/evals"
common=(configs/quickstart.yaml configs/schemes/rope.yaml model.d_model=64 model.n_layers=2
        model.n_heads=4 model.d_ff=256 model.dropout=0 eval.lengths=[] optim.grad_accum=1
        train.log_every=25 train.eval_batches=8 train.keep_checkpoints=1 train.threads=1)
# The --set arguments (eval) or overrides (train) of a kind; "none" is named too, since a
# study checkpoint (rope-dynamic_ntk) was saved with another kind.
scaling() {
  local factor=4
  [ "$1" = dynamic_ntk ] && factor=1
  echo "model.position.rope_scaling.kind=$1"
  [ "$1" = none ] || echo "model.position.rope_scaling.factor=$factor" \
    "model.position.rope_scaling.original_len=64"
}
with_set() { for a in "$@"; do printf -- '--set\n%s\n' "$a"; done; }

for seed in "${seeds[@]}"; do
  base=$out/base-s$seed
  ckpt=$base/checkpoints/ckpt_00000600.h5
  if [ -n "${STUDY_RUNS:-}" ]; then
    ckpt=$STUDY_RUNS/seed-$seed/checkpoints/ckpt_00006000.h5
    if [ ! -f "$ckpt" ]; then
      echo "tools/rope_extension_study.sh: no checkpoint '$ckpt' (expected a finished 6,000-step run: tools/study.sh extensions)" >&2
      exit 2
    fi
  elif [ ! -e "$base/summary.json" ]; then
    "$relpos" train "${common[@]}" data.seq_len=64 data.batch_size=32 train.steps=600 \
      schedule.warmup_steps=50 train.eval_every=600 train.checkpoint_every=600 \
      train.seed="$seed" train.out_dir="$base" > "$out/base-s$seed.log"
  fi
  for kind in none linear ntk dynamic_ntk yarn; do
    json=$out/evals/base-s$seed-$kind.json
    [ -e "$json" ] && continue
    mapfile -t sets < <(with_set $(scaling "$kind"))
    "$relpos" eval "$ckpt" --lengths 64,128,256,512,1024 --batches "$batches" "${sets[@]}" --json "$json" \
      > /dev/null
  done
  for kind in none linear yarn; do
    tuned=$out/tuned-$kind-s$seed
    if [ ! -e "$tuned/summary.json" ]; then
      "$relpos" train "${common[@]}" $(scaling "$kind") data.seq_len=256 data.batch_size=8 \
        train.steps=100 schedule.warmup_steps=10 optim.lr=1e-3 train.eval_every=100 \
        train.checkpoint_every=100 train.seed="$seed" train.out_dir="$tuned" \
        --init-from "$ckpt" > "$out/tuned-$kind-s$seed.log"
    fi
    json=$out/evals/tuned-s$seed-$kind.json
    [ -e "$json" ] || "$relpos" eval "$tuned/checkpoints/ckpt_00000100.h5" --lengths 64,256 \
      --batches "$batches" --json "$json" > /dev/null
  done
done
echo "done: tools/rope_extension_table.py $out/evals"
