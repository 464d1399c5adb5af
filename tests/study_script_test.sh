#!/usr/bin/env bash
# tools/study.sh on a tiny part, in a scratch folder: it trains through `relpos ablate`,
# copies the report from the sweep's own out_dir (not runs/study/PART) to
# docs/results/study/PART with a RUN.md (and draws the kNN run's gates), and refuses an
# unknown part or an overlay in one line, exit 2.
#   tests/study_script_test.sh RELPOS SOURCE_DIR
set -euo pipefail
relpos=$1
source_dir=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
mkdir -p configs/study
# The part's out_dir is deliberately not runs/study/<part>, as for the study's text parts.
cat > configs/study/tiny.yaml <<YAML
base: [$source_dir/configs/quickstart.yaml, $source_dir/configs/study/small_model.yaml]
overrides: [train.steps=60, train.eval_every=60, train.checkpoint_every=20, train.log_every=20]
out_dir: runs/study/shared
seeds: [0, 1]
jobs: 1
eval_lengths: [128]
eval_batches: 1
variants:
  - name: none
    files: [$source_dir/configs/schemes/none.yaml]
  - name: alibi
    files: [$source_dir/configs/schemes/alibi.yaml]
  - name: knn
    files: [$source_dir/configs/schemes/alibi.yaml]
    overrides: [model.knn_memory.layer=1, model.knn_memory.size=128, model.knn_memory.top_k=4]
YAML
fail() { echo "study_script_test: $*" >&2; exit 1; }

export RELPOS_DATA_DIR=$source_dir/data
# A call at its time limit: 2 s first; on a loaded machine that can fall before any run
# has trained a step, so the limit doubles (the part resumes) until a run is stopped mid-way.
limit=2
while :; do
  set +e
  RELPOS_STUDY_SECONDS=$limit "$source_dir/tools/study.sh" tiny "$relpos" > stopped.log 2>&1
  status=$?
  set -e
  [ "$status" -eq 3 ] || { cat stopped.log >&2; fail "a call at its time limit exited $status, expected 3"; }
  grep -q '^relpos: stopped by SIGTERM after step' stopped.log && break
  [ "$limit" -lt 32 ] || fail "no call of up to 32 s stopped a run after a step"
  limit=$((limit * 2))
done
grep -q '^| none | ' docs/results/study/tiny/PARTIAL.md || fail "PARTIAL.md lacks the none row"
[ ! -e docs/results/study/tiny/results.md ] || fail "a stopped part wrote results.md"

RELPOS_STUDY_JOBS=2 "$source_dir/tools/study.sh" tiny "$relpos" > study.log 2>&1 ||
  { cat study.log >&2; fail "tools/study.sh tiny failed"; }
# Two runs at once (RELPOS_STUDY_JOBS=2, the sweep says 1): a second run starts before the first ends.
second=$(grep -E '^(start|resume|done) ' study.log | sed -n 2p)
case $second in start* | resume*) ;; *) fail "RELPOS_STUDY_JOBS=2 ran one run at a time: $second" ;; esac
grep -q 'relpos ablate configs/study/tiny.yaml --jobs 2' docs/results/study/tiny/RUN.md ||
  fail "RUN.md does not name --jobs 2"
for file in results.md results.csv differences.csv RUN.md; do
  [ -s "docs/results/study/tiny/$file" ] || fail "docs/results/study/tiny/$file was not written"
done
grep -q '^| alibi' docs/results/study/tiny/results.md || fail "results.md lacks the alibi row"
grep -q 'relpos ablate configs/study/tiny.yaml' docs/results/study/tiny/RUN.md ||
  fail "RUN.md does not name the command"
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then  # the kNN run's gates, drawn
  [ -s docs/results/study/tiny/knn_gates.svg ] || fail "knn_gates.svg was not drawn"
  grep -q 'knn/seed-1 head 3' docs/results/study/tiny/knn_gates.svg || fail "knn_gates.svg lacks a run"
fi
[ ! -e docs/results/study/tiny/PARTIAL.md ] || fail "PARTIAL.md was left after the part finished"
# The run the limit stopped continues from its checkpoint (or, stopped after its last step,
# is only evaluated); runs trained in child processes (jobs > 1) report in their own logs.
stopped=$(sed -n 's#^relpos: stopped by SIGTERM after step [0-9]* of [0-9]*: saved runs/study/shared/\([a-z]*/seed-[0-9]\)/.*#\1#p' stopped.log | head -n 1)
[ -n "$stopped" ] || fail "the call at its time limit stopped no run with a checkpoint"
grep -qsE "^(resume $stopped from step [1-9]|skip $stopped: finished)" study.log runs/study/shared/logs/*.log ||
  fail "the second call did not continue the stopped run $stopped"
[ ! -e runs/study/tiny ] || fail "runs/study/tiny was made: the part must use the sweep's out_dir"

set +e
message=$(RELPOS_STUDY_JOBS=many "$source_dir/tools/study.sh" tiny "$relpos" 2>&1)
status=$?
set -e
[ "$status" -eq 2 ] || fail "RELPOS_STUDY_JOBS=many exited $status, expected 2"
[ "$(printf '%s\n' "$message" | wc -l)" -eq 1 ] || fail "RELPOS_STUDY_JOBS=many printed more than one line"
case $message in *"RELPOS_STUDY_JOBS='many'"*) ;; *) fail "unexpected message: $message" ;; esac

set +e
message=$("$source_dir/tools/study.sh" no-such-part "$relpos" 2>&1)
status=$?
set -e
[ "$status" -eq 2 ] || fail "an unknown part exited $status, expected 2"
[ "$(printf '%s\n' "$message" | wc -l)" -eq 1 ] || fail "an unknown part printed more than one line"
case $message in *"no part 'no-such-part'"*) ;; *) fail "unexpected message: $message" ;; esac
# An overlay (configs/study/*_model.yaml) is not a part, and not listed as one.
cp "$source_dir/configs/study/small_model.yaml" configs/study/
set +e
message=$("$source_dir/tools/study.sh" small_model "$relpos" 2>&1)
status=$?
set -e
[ "$status" -eq 2 ] || fail "the overlay small_model exited $status, expected 2"
case $message in *"(expected one of: tiny)"*) ;; *) fail "unexpected message: $message" ;; esac
echo "study_script_test: passed"
