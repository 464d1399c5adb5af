#!/usr/bin/env bash
# The tests under AddressSanitizer and UndefinedBehaviorSanitizer, and the fuzz smoke run,
# from one instrumented build: configures build-sanitize/ (-DRELPOS_SANITIZE=address,undefined,
# CPU only, no benchmarks, -O1 -g; with clang also -DRELPOS_FUZZ=ON, which adds libFuzzer's
# coverage instrumentation and the harnesses of tests/fuzz), builds it and runs ctest there:
# every Catch2 case but those tagged [slow] (whole training runs and child processes, run
# unsanitized by tools/test.sh), the mpirun tests and the script tests. Any sanitizer report
# fails its test. Then tools/fuzz-smoke.sh runs the harnesses of the same build (without
# clang it builds with g++, and the fuzz smoke run says SKIPPED). Extra arguments go to the
# CMake configure step (e.g. -DCMAKE_CXX_COMPILER_LAUNCHER=ccache).
set -euo pipefail
cd "$(dirname "$0")/.."
compiler=()
if command -v clang++ >/dev/null 2>&1; then
  compiler=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DRELPOS_FUZZ=ON)
fi
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DRELPOS_CUDA=OFF -DRELPOS_BUILD_BENCH=OFF -DRELPOS_SANITIZE=address,undefined \
  "${compiler[@]}" "$@"
cmake --build build-sanitize -j"$(nproc)"
# detect_leaks: every leak is a failure too; halt_on_error: the first report ends the test.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Leaks allocated inside HDF5 itself (tools/lsan.supp) are HDF5's, not ours.
export LSAN_OPTIONS="suppressions=$PWD/tools/lsan.supp:print_suppressions=0"
status=0
(cd build-sanitize && ctest --output-on-failure -j"$(nproc)" -E '^mpi_') || status=1
# The mpirun tests run under ASan and UBSan too, but without the leak check: Open MPI keeps
# allocations of its own after MPI_Finalize, in plugins it has unloaded by exit, so their
# stacks end in unknown modules and cannot be told apart from ours.
(cd build-sanitize && ASAN_OPTIONS="${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0}" \
  ctest --output-on-failure -j"$(nproc)" -R '^mpi_') || status=1
tools/fuzz-smoke.sh build-sanitize || status=1
exit "$status"
