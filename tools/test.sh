#!/usr/bin/env bash
# The test command: installs missing packages, builds everything (tools/build.sh),
# checks the C++ formatting (tools/check-format.sh) and the file sizes
# (tools/check-size.sh) and runs every test with ctest. Extra arguments go to the CMake
# configure step. Exits non-zero if a check or any test fails; all of them always run.
# The sanitizer suite and the fuzz smoke run share one instrumented build of their own:
# tools/sanitize.sh (CI runs both scripts).
#
# tools/test.sh --quick: the edit-test loop's tier, a few minutes on 2 cores: builds the
# executable and the Catch2 tests only, runs the two checks and every Catch2 test but
# those tagged [slow] (whole training runs, child processes, mpirun and the PyTorch
# fixtures are left to the full run).
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
if [ "${1:-}" = --quick ]; then
  quick=1
  shift
fi
if [ "$quick" -eq 1 ]; then
  tools/build.sh --target relpos_cli --target relpos_tests "$@"
else
  tools/build.sh "$@"
fi
format=0
tools/check-format.sh || format=1
size=0
tools/check-size.sh || size=1
tests=0
if [ "$quick" -eq 1 ]; then
  OMP_NUM_THREADS=2 build/tests/relpos_tests "~[slow]" || tests=1
else
  (cd build && ctest --output-on-failure -j"$(nproc)") || tests=1
fi
if [ "$format" -ne 0 ]; then
  echo "relpos: the formatting check failed (files listed above)" >&2
fi
if [ "$size" -ne 0 ]; then
  echo "relpos: the size check failed (files listed above)" >&2
fi
exit $((format | size | tests))
