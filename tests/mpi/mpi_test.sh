#!/usr/bin/env bash
# The data-parallel tests (docs/distributed.md), each a few seconds of 2 ranks on a tiny
# model. Usage: mpi_test.sh SCENARIO RELPOS COMPARE MPIRUN SOURCE_DIR
#   matches_one_process SCHEME  2 ranks vs 1 process: losses and state within TOLERANCE
#   deterministic               train.deterministic_reduce: two 2-rank runs bit-identical
#   resume_across_ranks         2 ranks -> checkpoint -> 1 rank -> checkpoint -> 2 ranks
#   user_error                  an error on rank 0 alone: every rank exits 2, one line
#   rank_killed                 SIGKILL of one rank mid-run: the job ends, checkpoints intact
# Exits 77 (reported Skipped by ctest) when relpos was built without MPI (MPIRUN empty).
set -uo pipefail
scenario=$1 scheme=$2 relpos=$3 compare=$4 mpirun=$5 source=$6
if [ -z "$mpirun" ]; then
  echo "SKIPPED: relpos was built without MPI (apt-get install openmpi-bin libopenmpi-dev)"
  exit 77
fi
# Measured 2 ranks vs 1 process (docs/distributed.md): losses and Adam moments within 1e-6
# relative, parameters within 3e-6 of each tensor's largest magnitude, except where Adam
# divides a near-zero gradient by its own tiny root mean square (XL's w_r: 5.5e-4). The
# tolerances leave room for other CPUs' summation orders.
TOLERANCE=2e-5
PARAMETER_TOLERANCE=2e-3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
tiny=(model.d_model=32 model.n_layers=1 model.n_heads=2 model.d_ff=64 data.seq_len=32
      data.batch_size=8 train.steps=20 train.log_every=1 train.eval_every=10 train.eval_batches=2
      train.checkpoint_every=10 train.keep_checkpoints=0 train.threads=1 schedule.warmup_steps=2
      "$source/configs/schemes/$scheme.yaml")
config=("$source/configs/quickstart.yaml")
ranks() {  # ranks N ARGS...: relpos under mpirun, bounded in time
  local n=$1; shift
  timeout 120 "$mpirun" -np "$n" --oversubscribe --allow-run-as-root "$relpos" "$@"
}
one() { timeout 120 "$relpos" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

case $scenario in
  matches_one_process)
    one train "${config[@]}" "${tiny[@]}" train.out_dir=one > one.log 2>&1 || fail "1 process"
    ranks 2 train "${config[@]}" "${tiny[@]}" train.out_dir=two > two.log 2>&1 ||
      { cat two.log; fail "2 ranks"; }
    grep -q "all 2 ranks hold the same parameters and optimizer state" two.log ||
      fail "no same-state check in the 2-rank log"
    grep -q '"world_size": 2' two/summary.json || fail "summary.json lacks world_size 2"
    grep -q '"all_reduce_s_per_step"' two/metrics.jsonl || fail "metrics lack all-reduce time"
    "$compare" one two 20 "$TOLERANCE" "$PARAMETER_TOLERANCE" || fail "2 ranks differ from 1 process"
    ;;
  deterministic)
    for run in a b; do
      ranks 2 train "${config[@]}" "${tiny[@]}" train.deterministic_reduce=true \
        train.out_dir=$run > $run.log 2>&1 || { cat $run.log; fail "run $run"; }
    done
    "$compare" a b 20 0 || fail "two deterministic 2-rank runs differ"
    ;;
  resume_across_ranks)
    # Reference: 2 ranks straight through 20 steps. Then 2 ranks to 10 (train.steps=10),
    # 1 process to 15, 2 ranks to 20.
    tiny+=(schedule.name=constant)  # the schedule would otherwise depend on train.steps
    ranks 2 train "${config[@]}" "${tiny[@]}" train.out_dir=straight > s.log 2>&1 ||
      { cat s.log; fail "straight run"; }
    ranks 2 train "${config[@]}" "${tiny[@]}" train.steps=10 train.out_dir=r > r1.log 2>&1 ||
      { cat r1.log; fail "2 ranks to step 10"; }
    one train "${config[@]}" "${tiny[@]}" train.steps=15 train.checkpoint_every=5 \
      train.out_dir=r --resume r > r2.log 2>&1 || { cat r2.log; fail "1 process to step 15"; }
    ranks 2 train "${config[@]}" "${tiny[@]}" train.out_dir=r --resume r > r3.log 2>&1 ||
      { cat r3.log; fail "2 ranks to step 20"; }
    grep -q "resumed from .*ckpt_00000015.h5 at step 15" r3.log || fail "did not resume at 15"
    "$compare" straight r 20 "$TOLERANCE" "$PARAMETER_TOLERANCE" || fail "the resumed run differs from the straight one"
    ;;
  user_error)
    # A run folder that holds a run: only rank 0 (which owns the folder) finds out.
    one train "${config[@]}" "${tiny[@]}" train.steps=2 train.out_dir=taken > first.log 2>&1 ||
      fail "first run"
    start=$(date +%s)
    ranks 2 train "${config[@]}" "${tiny[@]}" train.out_dir=taken > out.log 2> err.log
    rc=$?
    [ "$rc" -eq 2 ] || { cat out.log err.log; fail "exit code $rc, expected 2"; }
    [ $(( $(date +%s) - start )) -lt 60 ] || fail "took over 60 s"
    errors=$(grep -c "^relpos: error: " err.log)
    [ "$errors" -eq 1 ] || { cat err.log; fail "$errors error lines, expected 1"; }
    grep -q "relpos: error: .*taken.*--resume" err.log || { cat err.log; fail "wrong message"; }
    # A batch that does not split over the ranks: refused alike on every rank.
    ranks 2 train "${config[@]}" "${tiny[@]}" data.batch_size=7 train.out_dir=odd > o.log 2> e.log
    rc=$?
    [ "$rc" -eq 2 ] || { cat e.log; fail "batch_size 7: exit code $rc"; }
    [ "$(grep -c '^relpos: error: data.batch_size: 7 is not a multiple of the 2' e.log)" -eq 1 ] ||
      { cat e.log; fail "batch_size 7: message"; }
    # eval refuses several ranks.
    ranks 2 eval taken/checkpoints/ckpt_00000002.h5 > v.log 2> ve.log
    rc=$?
    [ "$rc" -eq 2 ] && [ "$(grep -c '^relpos: error: relpos eval runs in one process' ve.log)" -eq 1 ] ||
      { cat ve.log; fail "eval under mpirun: exit $rc"; }
    ;;
  rank_killed)
    # A long 2-rank run with a checkpoint every 5 steps; once two are written, one rank
    # is killed. mpirun must end the whole job (non-zero, bounded in time), and every
    # checkpoint left must verify and load.
    ranks 2 train "${config[@]}" "${tiny[@]}" train.steps=100000 train.checkpoint_every=5 \
      train.out_dir=k > k.log 2>&1 &
    job=$!
    for _ in $(seq 600); do
      [ "$(ls k/checkpoints/*.h5.digest 2>/dev/null | wc -l)" -ge 2 ] && break
      sleep 0.1
    done
    victim=$(pgrep -f "^$relpos train .*train.out_dir=k" | tail -1)
    [ -n "$victim" ] || { cat k.log; fail "no rank process found"; }
    start=$(date +%s)
    kill -9 "$victim"
    wait "$job"
    rc=$?
    [ "$rc" -ne 0 ] || fail "the job exited 0 after a rank was killed"
    [ "$rc" -ne 124 ] || fail "the job hung after a rank was killed"
    [ $(( $(date +%s) - start )) -lt 60 ] || fail "took over 60 s to end"
    checkpoints=(k/checkpoints/ckpt_*.h5)
    [ "${#checkpoints[@]}" -ge 2 ] || fail "fewer than 2 checkpoints"
    for c in "${checkpoints[@]}"; do
      one inspect "$c" > /dev/null 2>&1 || fail "checkpoint $c does not load"
    done
    ;;
  *) echo "unknown scenario $scenario"; exit 2 ;;
esac
echo "PASS: $scenario $scheme"
