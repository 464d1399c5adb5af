#!/usr/bin/env bash
# The GPU check, one call on the device machine (docs/cuda.md): run from the repository root
# there with the bundle made here by
#   cmake --build build -j2 && ../shared/tools/gpu-bundle.sh build gpu-bundle \
#     build/train/relpos build/tests/cuda/relpos_cuda_tests
# and OUT set to the folder whose files come back. It runs the CUDA tests, then the quickstart
# for 300 steps on the GPU and on the CPU, evaluates the GPU checkpoint, and writes
# every log plus summary.txt under $OUT.
set -uo pipefail
out=${OUT:?OUT must name the folder for the logs}
run=gpu-bundle/run.sh
summary="$out/summary.txt"
# The executables were built in another checkout: the data and the tests' sources are here.
export RELPOS_SOURCE_DIR=$PWD RELPOS_DATA_DIR=$PWD/data
say() { echo "$*" | tee -a "$summary"; }
: >"$summary"
nvidia-smi -L 2>&1 | tee -a "$summary"
timeout 200 "$run" bin/relpos_cuda_tests >"$out/cuda_tests.log" 2>&1
say "relpos_cuda_tests: exit $? ($(grep -E '^(All tests passed|test cases:)' "$out/cuda_tests.log" | tail -1))"
for device in cuda cpu; do
  start=$(date +%s)
  timeout 120 "$run" bin/relpos train configs/quickstart.yaml train.steps=300 train.eval_every=100 \
    train.device="$device" train.out_dir="/tmp/gpu_check_$device" >"$out/quickstart_$device.log" 2>&1
  status=$?
  say "quickstart on $device: exit $status, $(($(date +%s) - start)) s," \
    "$(grep -E '^step 300: val' "$out/quickstart_$device.log" | tail -1)"
done
# eval and sample run on the CPU (a GPU checkpoint is usable anywhere): the GPU run's
# checkpoint must give the loss the GPU measured at step 300.
timeout 60 "$run" bin/relpos eval /tmp/gpu_check_cuda/checkpoints/ckpt_00000300.h5 \
  --lengths 128,512 --batches 8 >"$out/eval_cuda_checkpoint.log" 2>&1
say "eval of the GPU checkpoint (on the CPU): exit $?"
grep -E '^ *(128|512) ' "$out/eval_cuda_checkpoint.log" | tee -a "$summary"
exit 0
