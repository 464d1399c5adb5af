#!/usr/bin/env bash
# The GPU check, one call on the device machine (docs/cuda.md): run from the repository root
# there with the bundle made here by
#   cmake --build build -j2 --target relpos_cli relpos_cuda_tests bench_cuda_attention bench_cuda_train
#   ../shared/tools/gpu-bundle.sh build gpu-bundle build/train/relpos \
#     build/tests/cuda/relpos_cuda_tests build/bench/bench_cuda_attention build/bench/bench_cuda_train
# and OUT set to the folder whose files come back. In about 4 minutes on an H200 it runs the
# CUDA tests; the quickstart for 300 steps on the GPU and on the CPU; an evaluation of the GPU
# checkpoint; compute-sanitizer (memcheck on every test case, leak check on the optimizer's,
# racecheck on the optimizer's); and the GPU benchmarks against PyTorch
# (bench/run_cuda_bench.sh). It leaves summary.txt, bench.md and logs.tgz (every log) in $OUT.
set -uo pipefail
out=${OUT:?OUT must name the folder for the logs}
run=gpu-bundle/run.sh
logs=$(mktemp -d)
summary="$out/summary.txt"
# The executables were built in another checkout: the data and the tests' sources are here.
export RELPOS_SOURCE_DIR=$PWD RELPOS_DATA_DIR=$PWD/data
say() { echo "$*" | tee -a "$summary"; }
: >"$summary"
nvidia-smi -L 2>&1 | tee -a "$summary"
timeout 200 "$run" bin/relpos_cuda_tests >"$logs/cuda_tests.log" 2>&1
say "relpos_cuda_tests: exit $? ($(grep -E '^(All tests passed|test cases:)' "$logs/cuda_tests.log" | tail -1))"
for device in cuda cpu; do
  start=$(date +%s)
  timeout 120 "$run" bin/relpos train configs/quickstart.yaml train.steps=300 train.eval_every=100 \
    train.device="$device" train.out_dir="/tmp/gpu_check_$device" >"$logs/quickstart_$device.log" 2>&1
  status=$?
  say "quickstart on $device: exit $status, $(($(date +%s) - start)) s," \
    "$(grep -E '^step 300: val' "$logs/quickstart_$device.log" | tail -1)"
done
# eval and sample run on the CPU (a GPU checkpoint is usable anywhere): the GPU run's
# checkpoint must give the loss the GPU measured at step 300.
timeout 60 "$run" bin/relpos eval /tmp/gpu_check_cuda/checkpoints/ckpt_00000300.h5 \
  --lengths 128,512 --batches 8 >"$logs/eval_cuda_checkpoint.log" 2>&1
say "eval of the GPU checkpoint (on the CPU): exit $?"
grep -E '^ *(128|512) ' "$logs/eval_cuda_checkpoint.log" | tee -a "$summary"

# compute-sanitizer runs the unpacked test binary itself (run.sh unpacked it above). The
# error tests provoke CUDA API errors on purpose (an invalid device ordinal, an impossible
# cudaMalloc): memcheck reports those 8, so memory-access errors and leaks are counted apart.
# The leak check's 4 expected reports are the cuBLAS handle and its workspace, kept for the
# whole process by design (autograd/cuda/gemm.cpp).
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
tests=$(ls -d "$PWD"/gpu-bundle/.unpacked-*/bin 2>/dev/null | head -n 1)/relpos_cuda_tests
sanitize() {  # LOG SECONDS TOOL-ARGUMENTS... -- CATCH2-TEST-SPEC
  local log=$1 limit=$2
  shift 2
  local tool=() spec
  while [ "$1" != -- ]; do tool+=("$1"); shift; done
  spec=$2
  timeout "$limit" "$run" "$sanitizer" "${tool[@]}" "$tests" "$spec" >"$logs/$log" 2>&1
  local status=$? access leaks
  access=$(grep -c -E '^========= +(Invalid|Uninitialized|Race|Barrier)' "$logs/$log")
  leaks=$(grep -c -E '^========= +Leaked' "$logs/$log")
  say "compute-sanitizer ${tool[*]} '$spec': exit $status, memory-access reports $access, leaks $leaks;" \
    "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^All tests passed|^test cases' "$logs/$log" | tr '\n' ' ')"
}
sanitize memcheck_optim.log 90 --tool memcheck --leak-check full -- "[optim]"
sanitize memcheck_ops.log 120 --tool memcheck -- "[backend_ops]"
sanitize memcheck_rest.log 120 --tool memcheck -- "[cuda]~[optim]~[backend_ops]"
sanitize racecheck_optim.log 60 --tool racecheck -- "[optim]"

timeout 200 env OUT_DIR="$logs/bench" bash bench/run_cuda_bench.sh --bundle gpu-bundle \
  --lengths "512 2048 8192" --reps 5 --rounds 3 --steps 20 >"$out/bench.md" 2>"$logs/bench.err"
say "bench/run_cuda_bench.sh: exit $? (tables in bench.md)"
tar czf "$out/logs.tgz" -C "$logs" .
exit 0
