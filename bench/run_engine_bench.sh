#!/usr/bin/env bash
# Runs the engine benchmarks with one thread count for everything
# (OMP_NUM_THREADS, torch.set_num_threads) and prints markdown:
#   1. GEMM forward+backward, engine vs raw OpenBLAS (bench_matmul);
#   2. per-op autograd overhead, relpos vs PyTorch (bench_overhead, op_overhead_torch.py);
#   3. the MLP training step, relpos and PyTorch run alternately, round by round
#      (bench_mlp, mlp_torch.py), median over rounds;
#   4. a summary table of speed ratios.
# Usage: bench/run_engine_bench.sh [--threads T] [--rounds R] [--build-dir DIR]
# Build first: cmake -S . -B build-bench && cmake --build build-bench -j2
set -euo pipefail
cd "$(dirname "$0")/.."

threads=2
rounds=7
build_dir=build-bench
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --build-dir) build_dir="$2"; shift 2 ;;
    *) echo "run_engine_bench.sh: unknown argument '$1' (expected --threads, --rounds or --build-dir)" >&2
       exit 2 ;;
  esac
done

bin="$build_dir/bench"
for exe in bench_matmul bench_overhead bench_mlp; do
  if [[ ! -x "$bin/$exe" ]]; then
    echo "run_engine_bench.sh: $bin/$exe not found; build it with" \
         "'cmake -S . -B $build_dir && cmake --build $build_dir -j2'" >&2
    exit 2
  fi
done
python=/usr/bin/python3
if ! "$python" -c "import torch" 2>/dev/null; then
  echo "run_engine_bench.sh: $python cannot import torch (apt-get install python3-torch)" >&2
  exit 2
fi
export OMP_NUM_THREADS="$threads"

# Median of the numbers on stdin.
median() { sort -g | awk '{v[NR] = $1} END {printf "%.3f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# Column $2 (1-based, between the pipes) of the markdown row whose first cell is $1.
cell() { awk -F'|' -v key="$1" -v col="$2" '{gsub(/^ +| +$/, "", $2)} $2 == key {gsub(/ /, "", $(col + 1)); print $(col + 1)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

echo "# relpos engine benchmarks"
echo
echo "$(getconf _NPROCESSORS_ONLN) cores, OMP_NUM_THREADS=$threads, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo

echo "## GEMM forward + backward"
echo
gemm=$("$bin/bench_matmul")
echo "$gemm"
echo

echo "## Per-op overhead"
echo
echo "relpos:"
echo
overhead=$("$bin/bench_overhead")
echo "$overhead"
echo
echo "PyTorch:"
echo
overhead_torch=$("$python" bench/op_overhead_torch.py --threads "$threads")
echo "$overhead_torch"
echo

echo "## MLP training step (batch 256, 512->1024->512, GELU, MSE, SGD)"
echo
# The two run back to back in each round, so the ratio within a round is what
# survives a shared machine's changing load; the summary takes its median.
echo "| round | relpos steps/s | PyTorch steps/s | relpos/PyTorch |"
echo "|---:|---:|---:|---:|"
relpos_rates=()
torch_rates=()
round_ratios=()
steps_per_s() { awk '/^steps\/s/ {print $2}'; }
for ((r = 1; r <= rounds; ++r)); do
  relpos_rates+=("$("$bin/bench_mlp" --reps 3 --steps 10 | steps_per_s)")
  torch_rates+=("$("$python" bench/mlp_torch.py --reps 3 --steps 10 --threads "$threads" | steps_per_s)")
  round_ratios+=("$(ratio "${relpos_rates[-1]}" "${torch_rates[-1]}")")
  echo "| $r | ${relpos_rates[-1]} | ${torch_rates[-1]} | ${round_ratios[-1]} |"
done
mlp_relpos=$(printf '%s\n' "${relpos_rates[@]}" | median)
mlp_torch=$(printf '%s\n' "${torch_rates[@]}" | median)
mlp_ratio=$(printf '%s\n' "${round_ratios[@]}" | median)
mlp_best_relpos=$(printf '%s\n' "${relpos_rates[@]}" | sort -g | tail -1)
mlp_best_torch=$(printf '%s\n' "${torch_rates[@]}" | sort -g | tail -1)
echo

echo "## Summary (speed ratio: relpos ÷ reference, above 1 means relpos is faster)"
echo
echo "| benchmark | relpos | reference | speed ratio |"
echo "|---|---:|---:|---:|"
for shape in 256×256×256 512×512×512 1024×1024×1024 2048×256×256; do
  engine=$(echo "$gemm" | cell "$shape" 2)
  raw=$(echo "$gemm" | cell "$shape" 3)
  echo "| GEMM fwd+bwd $shape (GFLOP/s) | $engine | $raw (OpenBLAS) | $(ratio "$engine" "$raw") |"
done
for operand in "constant" "leaf, requires grad"; do
  ours=$(echo "$overhead" | cell "$operand" 4)
  theirs=$(echo "$overhead_torch" | cell "$operand" 4)
  echo "| per-op fwd+bwd, $operand operand (µs) | $ours | $theirs (PyTorch) | $(ratio "$theirs" "$ours") |"
done
ours=$(echo "$overhead" | cell "constant" 5)
theirs=$(echo "$overhead_torch" | cell "constant" 5)
echo "| per-op no-grad (µs) | $ours | $theirs (PyTorch) | $(ratio "$theirs" "$ours") |"
echo "| MLP step, median of $rounds rounds (steps/s; ratio: median of per-round ratios) | $mlp_relpos | $mlp_torch (PyTorch) | $mlp_ratio |"
echo "| MLP step, best round (steps/s) | $mlp_best_relpos | $mlp_best_torch (PyTorch) | $(ratio "$mlp_best_relpos" "$mlp_best_torch") |"
