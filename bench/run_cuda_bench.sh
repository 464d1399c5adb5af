#!/usr/bin/env bash
# bench/run_cuda_bench.sh [--bundle DIR | --build-dir DIR] [--python PY] [--lengths "512 2048 8192"]
#                         [--reps N] [--rounds N] [--steps N] [--tf32]
#
# The GPU benchmarks, on a machine with a CUDA device, from the repository root:
#   1. one attention layer fwd+bwd per scheme: bench_cuda_attention, then
#      bench/cuda_attention_torch.py (PyTorch eager, the same biases);
#   2. training tokens/s of the 6-layer d_model 512 model: bench_cuda_train and
#      bench/cuda_train_torch.py, alternating for --rounds rounds;
# then prints markdown tables with the ratios (PyTorch time / relpos time) and
# the issue's targets. Raw JSON lines are kept in $OUT_DIR (default
# $OUT/relpos_cuda_bench when $OUT is set, else /tmp/relpos_cuda_bench).
#
# Executables come from a bundle made by ../shared/tools/gpu-bundle.sh (--bundle,
# default gpu-bundle/ when it exists) or from a build folder (--build-dir,
# default build-cuda/). PY (default python3) must import torch with CUDA.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUNDLE="" BUILD_DIR="" PYTHON=python3 LENGTHS="512 2048 8192" REPS=5 ROUNDS=3 STEPS=20 TF32=()
[ -x "$ROOT/gpu-bundle/run.sh" ] && BUNDLE="$ROOT/gpu-bundle"
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) BUNDLE=$2; shift 2 ;;
    --build-dir) BUILD_DIR=$2; BUNDLE=""; shift 2 ;;
    --python) PYTHON=$2; shift 2 ;;
    --lengths) LENGTHS=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --tf32) TF32=(--tf32); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_cuda_bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$BUNDLE" ] || BUILD_DIR=${BUILD_DIR:-$ROOT/build-cuda}

# relpos executable NAME with arguments, from the bundle or the build folder.
relpos_bench() {
  local name=$1; shift
  if [ -n "$BUNDLE" ]; then
    GPU_BUNDLE_QUIET=1 "$BUNDLE/run.sh" "$name" "$@"
  else
    [ -x "$BUILD_DIR/bench/$name" ] || { echo "run_cuda_bench.sh: $BUILD_DIR/bench/$name not built (configure with -DRELPOS_CUDA=ON)" >&2; exit 1; }
    "$BUILD_DIR/bench/$name" "$@"
  fi
}

OUT_DIR=${OUT_DIR:-${OUT:-/tmp}/relpos_cuda_bench}
mkdir -p "$OUT_DIR"
ATTENTION="$OUT_DIR/cuda_attention.jsonl" TRAIN="$OUT_DIR/cuda_train.jsonl"
: > "$ATTENTION"
: > "$TRAIN"
export RELPOS_DATA_DIR=${RELPOS_DATA_DIR:-$ROOT/data}  # the bundled corpus

command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# shellcheck disable=SC2086  # LENGTHS is a list
relpos_bench bench_cuda_attention $LENGTHS --reps "$REPS" "${TF32[@]}" >> "$ATTENTION"
# shellcheck disable=SC2086
"$PYTHON" "$ROOT/bench/cuda_attention_torch.py" $LENGTHS --reps "$REPS" "${TF32[@]}" >> "$ATTENTION"
for round in $(seq "$ROUNDS"); do
  echo "training round $round of $ROUNDS" >&2
  relpos_bench bench_cuda_train --steps "$STEPS" "${TF32[@]}" >> "$TRAIN"
  "$PYTHON" "$ROOT/bench/cuda_train_torch.py" --steps "$STEPS" "${TF32[@]}" >> "$TRAIN"
done

"$PYTHON" - "$ATTENTION" "$TRAIN" <<'PY'
import json, statistics, sys

def rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]

attention = {(r["framework"], r["scheme"], r["len"]): r for r in rows(sys.argv[1])}
print("\n## One attention layer fwd+bwd (B*H = 32, head_dim 64, causal, ms, median)\n")
print("| scheme | L | relpos ms | PyTorch ms | speed-up | relpos MiB | PyTorch MiB |")
print("|---|---:|---:|---:|---:|---:|---:|")
targets = []
for (framework, scheme, length), ours in sorted(attention.items(), key=lambda kv: (kv[0][2], kv[0][1])):
    if framework != "relpos":
        continue
    theirs = attention.get(("torch", scheme, length), {})
    if "ms" in ours and "ms" in theirs:
        speedup = theirs["ms"] / ours["ms"]
        print(f"| {scheme} | {length} | {ours['ms']:.2f} | {theirs['ms']:.2f} | {speedup:.2f}x"
              f" | {ours['peak_mib']:.0f} | {theirs['peak_mib']:.0f} |")
        if scheme in ("t5", "shaw") and length >= 2048:
            targets.append((f"attention {scheme} L={length} >= 2x PyTorch", speedup >= 2.0, speedup))
    else:
        why = ours.get("error") or theirs.get("error", "missing")
        print(f"| {scheme} | {length} | {ours.get('ms', '-')} | {theirs.get('ms', '-')} | ({why}) | | |")

train = rows(sys.argv[2])
ours = [r["tokens_per_s"] for r in train if r["framework"] == "relpos"]
theirs = [r["tokens_per_s"] for r in train if r["framework"] == "torch"]
ratios = [a / b for a, b in zip(ours, theirs)]
print("\n## Training, 6 layers, d_model 512, batch 16 x 512 (tokens/s, median of rounds)\n")
print("| relpos | PyTorch eager | speed-up (median of per-round ratios) |\n|---:|---:|---:|")
if ratios:
    ratio = statistics.median(ratios)
    print(f"| {statistics.median(ours):.0f} | {statistics.median(theirs):.0f} | {ratio:.2f}x |")
    targets.append(("end-to-end training >= 1.3x PyTorch", ratio >= 1.3, ratio))
print("\n## Targets\n")
for name, met, value in targets:
    print(f"- {name}: {'met' if met else 'NOT met'} ({value:.2f}x)")
PY
