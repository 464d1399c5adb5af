#!/usr/bin/env bash
# The golden check of a refactoring: three short runs (the quickstart, a Transformer-XL
# recurrence run and a 2-rank mpirun run of the quickstart) whose every logged training
# loss, gradient norm, learning rate and validation loss must equal, bit for bit, the
# values recorded at an earlier commit on the same CPU kind: tests/golden/ holds one file
# per CPU kind (losses-<kind>.txt, its "# cpu:" line naming the model and instruction sets).
# Usage: tools/golden-losses.sh [--record] [RELPOS]   (RELPOS: default build/train/relpos)
# ctest runs it as golden_losses (tests/CMakeLists.txt), in the full tier only.
#   --record  writes this CPU kind's file instead of comparing (run it at the commit
#             whose behaviour is the reference, e.g. before a refactoring)
# Exits 0 when equal, 1 on a difference (the differing lines are printed), 2 on bad use,
# 77 (Skipped under ctest) when no file was recorded on this CPU kind or relpos was built
# without MPI: floating-point sums differ between CPU kinds, so losses are only comparable
# on one.
set -uo pipefail
source_dir=$(cd "$(dirname "$0")/.." && pwd)
golden="$source_dir/tests/golden"
record=0
if [ "${1:-}" = --record ]; then
  record=1
  shift
fi
relpos=$(realpath "${1:-$source_dir/build/train/relpos}")
[ -x "$relpos" ] || { echo "golden-losses.sh: no relpos executable at $relpos" >&2; exit 2; }
mpirun=${RELPOS_MPIRUN:-$(command -v mpirun || true)}  # ctest passes CMake's mpiexec
if [ -z "$mpirun" ]; then
  echo "SKIPPED: mpirun is not installed (apt-get install openmpi-bin libopenmpi-dev)"
  exit 77
fi
# The CPU kind: its model name and the instruction sets relpos's kernels choose between.
# The family and model numbers tell apart CPUs of one name (lscpu says "AMD EPYC" for
# both a Zen 4 and a Zen 5 here).
model=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
family=$(grep -m1 '^cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')
number=$(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')
model="$model (family $family model $number)"
features=$(grep -m1 '^flags' /proc/cpuinfo | grep -o -w 'avx2\|avx512f\|avx512_bf16\|amx_tile' |
  tr '\n' ' ' | sed 's/ $//')
cpu="$model; $features"
# This kind's file: the one whose "# cpu:" line is this CPU's, else a new name made from it.
expected=$(grep -lxF "# cpu: $cpu" "$golden"/losses-*.txt 2>/dev/null | head -n 1)
[ -n "$expected" ] ||
  expected="$golden/losses-$(echo "$cpu" | tr -cs 'A-Za-z0-9_' '-' | sed 's/-*$//').txt"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
short=(train.log_every=5 train.eval_every=15 train.eval_batches=2 train.checkpoint_every=100
       train.keep_checkpoints=1 schedule.warmup_steps=5 "eval.lengths=[64]")
runs=(
  "quickstart|$relpos train $source_dir/configs/quickstart.yaml ${short[*]} train.steps=30 train.threads=2 train.out_dir=quickstart"
  "recurrence|$relpos train $source_dir/configs/recurrence.yaml ${short[*]} train.steps=30 train.threads=2 train.out_dir=recurrence"
  "two_ranks|$mpirun -np 2 --oversubscribe --allow-run-as-root $relpos train $source_dir/configs/quickstart.yaml ${short[*]} train.steps=20 train.threads=1 train.out_dir=two_ranks"
)
{
  echo "# tools/golden-losses.sh: the metrics of three short runs, compared bit for bit"
  echo "# cpu: $cpu"
} > got.txt
for run in "${runs[@]}"; do
  name=${run%%|*}
  command=${run#*|}
  # shellcheck disable=SC2086  # the command is a word list on purpose
  if ! timeout 600 $command > "$name.log" 2>&1; then
    cat "$name.log"
    echo "golden-losses.sh: the $name run failed: $command" >&2
    exit 1
  fi
  # The values, as metrics.jsonl writes them (shortest round-trip decimals: text equality
  # is bit equality), one line per record.
  python3 - "$name" "$name/metrics.jsonl" >> got.txt <<'EOF'
import json, sys
name, path = sys.argv[1], sys.argv[2]
for line in open(path):
    record = json.loads(line)
    values = [f"{k}={json.dumps(record[k])}" for k in ("step", "loss", "grad_norm", "lr", "val_loss") if k in record]
    if len(values) > 1:
        print(name, *values)
EOF
done
if [ "$record" -eq 1 ]; then
  mkdir -p "$(dirname "$expected")"
  cp got.txt "$expected"
  echo "golden-losses.sh: recorded $(grep -vc '^#' "$expected") lines in $expected"
  exit 0
fi
if [ ! -f "$expected" ]; then
  echo "SKIPPED: no golden losses were recorded on this CPU kind ($cpu); $golden has" \
    "$(grep -h '^# cpu:' "$golden"/losses-*.txt 2>/dev/null | sed 's/^# cpu: //' | paste -sd '|')." \
    "Record them here at the reference commit with --record."
  exit 77
fi
if diff -u "$expected" got.txt; then
  echo "golden-losses.sh: $(grep -vc '^#' got.txt) metrics lines equal, bit for bit ($cpu)"
  exit 0
fi
echo "golden-losses.sh: the metrics differ from $expected (lines above)" >&2
exit 1
