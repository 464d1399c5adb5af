#!/usr/bin/env bash
# The results study of docs/results/study.md, one part per call:
#   tools/study.sh PART [RELPOS]        (RELPOS: build/train/relpos)
# PART is a sweep file configs/study/PART.yaml (pilot, text, ...; docs/results/study.md
# lists them with their measured times). A part is `relpos ablate` on that file, so it
# resumes after an interruption: finished runs are skipped, an interrupted one continues
# from its last checkpoint, and the evaluation is reused when its settings are unchanged.
# When the part finishes, its report and figures (results.md, results.csv,
# differences.csv, *.png, *.svg) are copied from the sweep's out_dir (runs/study/...) to
# docs/results/study/PART, with the command, the machine and the wall time in RUN.md,
# ready to be committed. A call stops after RELPOS_STUDY_SECONDS (default 2400: parts of
# at most 40 minutes), leaving the finished runs' figures in PARTIAL.md and exit code 3;
# the same command continues. RELPOS_STUDY_JOBS=N trains N runs at once (`relpos ablate
# --jobs N`; default: the sweep's jobs, 2), e.g. 16 on a 16-core machine.
# Two parts add a step when they finish: extensions reads its RoPE models with every
# context-extension kind (rope_extension.md), size compares its ranking with part text's
# (ranking.md, ranking.png).
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: tools/study.sh PART [RELPOS]" >&2
  exit 2
fi
part=$1
relpos=${2:-build/train/relpos}
sweep=configs/study/$part.yaml
# configs/study/*_model.yaml are the parts' config overlays, not parts.
if [[ ! $part =~ ^[a-z0-9_-]+$ ]] || [[ $part == *_model ]] || [ ! -f "$sweep" ]; then
  names=()
  for file in configs/study/*.yaml; do
    name=$(basename "$file" .yaml)
    [[ $name == *_model ]] || names+=("$name")
  done
  echo "tools/study.sh: no part '$part' (expected one of: ${names[*]})" >&2
  exit 2
fi
if [ ! -x "$relpos" ]; then
  echo "tools/study.sh: '$relpos' is not an executable (build it: cmake --build build --target relpos_cli)" >&2
  exit 2
fi
jobs=()
if [ -n "${RELPOS_STUDY_JOBS:-}" ]; then
  if [[ ! $RELPOS_STUDY_JOBS =~ ^[1-9][0-9]{0,3}$ ]]; then
    echo "tools/study.sh: RELPOS_STUDY_JOBS='$RELPOS_STUDY_JOBS' is not a number of runs from 1 to 1024" >&2
    exit 2
  fi
  jobs=(--jobs "$RELPOS_STUDY_JOBS")
fi
# The sweep's own out_dir: parts that share one (text-1, text, settings, tuning) report there.
out=$(sed -n 's/^out_dir: *\([^ #]*\).*/\1/p' "$sweep")
dest=docs/results/study/$part
start=$(date +%s)
# A part runs at most RELPOS_STUDY_SECONDS (default 40 minutes): then the sweep is stopped
# as on SIGTERM (the running trainings save a checkpoint), the finished runs are summed up
# in PARTIAL.md, and the same command continues where it stopped.
limit=${RELPOS_STUDY_SECONDS:-2400}
mkdir -p "$dest"
set +e
timeout --signal=TERM --kill-after=300 "$limit" "$relpos" ablate "$sweep" "${jobs[@]}"
status=$?
set -e
seconds=$(($(date +%s) - start))
if [ "$status" -eq 124 ]; then
  mapfile -t variants < <(sed -n 's/^  - name: *\([^ #]*\).*/\1/p' "$sweep")
  /usr/bin/python3 "$(dirname "$0")/study_partial.py" "$out" "$dest/PARTIAL.md" "${variants[@]}"
  echo "tools/study.sh: part $part stopped at its limit of $limit s; $dest/PARTIAL.md has the" \
    "finished runs; run the same command again to continue" >&2
  exit 3
fi
[ "$status" -eq 0 ] || exit "$status"
rm -f -- "$dest/PARTIAL.md"
shopt -s nullglob
for file in "$out"/results.md "$out"/results.csv "$out"/differences.csv "$out"/*.png "$out"/*.svg; do
  [ -e "$file" ] || continue  # differences.csv: only with seeds
  cp -- "$file" "$dest/$(basename "$file").tmp"
  mv -- "$dest/$(basename "$file").tmp" "$dest/$(basename "$file")"
done
# The kNN layer's gates by step, where runs logged them (docs/knn-memory.md): knn_gates.png.
gated=()
for metrics in "$out"/*/metrics.jsonl "$out"/*/seed-*/metrics.jsonl; do
  run=${metrics%/metrics.jsonl}
  grep -q '"knn_gate"' "$metrics" && gated+=("${run#"$out"/}=$run")
done
if [ ${#gated[@]} -gt 0 ]; then
  /usr/bin/python3 "$(dirname "$0")/plot.py" knn-gates "$dest/knn_gates.png" "${gated[@]}" ||
    echo "tools/study.sh: the gates' figure was not drawn (see above)" >&2
fi
# Part extensions: its RoPE models (rope-dynamic_ntk, trained as plain RoPE) read with every
# context-extension kind and fine-tuned at 4L (tools/rope_extension_study.sh), whole split.
if [ "$part" = extensions ]; then
  extension=runs/study/rope-extension
  evals=$extension/evals
  STUDY_RUNS=$out/rope-dynamic_ntk SEEDS="0 1 2 3 4" EVAL_BATCHES=0 \
    "$(dirname "$0")/rope_extension_study.sh" "$relpos" "$extension"
  /usr/bin/python3 "$(dirname "$0")/rope_extension_table.py" "$evals" --study \
    > "$dest/rope_extension.md.tmp"
  mv -- "$dest/rope_extension.md.tmp" "$dest/rope_extension.md"
  mkdir -p "$dest/rope_extension_evals"
  cp -- "$evals"/*.json "$dest/rope_extension_evals/"
fi
# Part size: whether the second model size ranks the schemes as part text did (item 5),
# at every length both parts read.
if [ "$part" = size ]; then
  /usr/bin/python3 "$(dirname "$0")/study_ranking.py" docs/results/study/text "$dest" \
    --length all --figure "$dest/ranking.png" > "$dest/ranking.md.tmp"
  mv -- "$dest/ranking.md.tmp" "$dest/ranking.md"
fi
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
{
  echo "# Study part $part"
  echo
  echo "Command: \`${RELPOS_STUDY_JOBS:+RELPOS_STUDY_JOBS=$RELPOS_STUDY_JOBS }tools/study.sh $part\` (\`relpos ablate $sweep${jobs[*]:+ ${jobs[*]}}\`), from the repository root."
  echo "Finished $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores of $cpu; this call took"
  echo "$seconds s of wall time (runs that an earlier call finished are not counted again)."
  echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
  # A task's out-of-distribution results count only where it learned the task in
  # distribution: exact match >= 0.95 at its training length.
  python3 - "$out/results.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
short = []
for r in rows:
    key = f"exact_match_at_{r['train_length']}"
    if r.get(key, "nan") not in ("", "nan") and float(r[key]) < 0.95:
        short.append(f"{r['variant']} ({float(r[key]):.3f})")
if short:
    print()
    print("In-distribution exact match below 0.95, so their longer lengths are not to be")
    print("reported: " + ", ".join(short) + ".")
PY
} > "$dest/RUN.md.tmp"
mv -- "$dest/RUN.md.tmp" "$dest/RUN.md"
echo "copied the report and figures to $dest (commit them)"
