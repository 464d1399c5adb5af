#!/usr/bin/env bash
# The whole ctest suite under AddressSanitizer and UndefinedBehaviorSanitizer: configures
# build-asan/ (-DRELPOS_SANITIZE=address,undefined, CPU only, no benchmarks, -O1 -g), builds
# it and runs ctest there: every Catch2 case but those tagged [slow] (whole training runs and
# child processes, run unsanitized by tools/test.sh), the mpirun tests and the script tests. Any sanitizer report fails its test. Extra arguments go to the
# CMake configure step (e.g. -DCMAKE_CXX_COMPILER_LAUNCHER=ccache).
# On 2 cores: about 5 minutes to build from scratch on a quiet machine (25 shared) and 1 to 4
# minutes for ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" -DRELPOS_CUDA=OFF -DRELPOS_BUILD_BENCH=OFF \
  -DRELPOS_SANITIZE=address,undefined "$@"
cmake --build build-asan -j"$(nproc)"
# detect_leaks: every leak is a failure too; halt_on_error: the first report ends the test.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Leaks allocated inside HDF5 itself (tools/lsan.supp) are HDF5's, not ours.
export LSAN_OPTIONS="suppressions=$PWD/tools/lsan.supp:print_suppressions=0"
cd build-asan
ctest --output-on-failure -j"$(nproc)" -E '^mpi_'
# The mpirun tests run under ASan and UBSan too, but without the leak check: Open MPI keeps
# allocations of its own after MPI_Finalize, in plugins it has unloaded by exit, so their
# stacks end in unknown modules and cannot be told apart from ours.
ASAN_OPTIONS="${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0}" \
  ctest --output-on-failure -j"$(nproc)" -R '^mpi_'
