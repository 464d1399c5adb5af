#!/usr/bin/env bash
# The test command: installs missing packages, builds everything (tools/build.sh),
# checks the C++ formatting (tools/check-format.sh) and runs every test with ctest.
# Extra arguments go to the CMake configure step. Exits non-zero if the formatting
# check or any test fails; both always run.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh "$@"
format=0
tools/check-format.sh || format=1
tests=0
(cd build && ctest --output-on-failure -j"$(nproc)") || tests=1
fuzz=0
tools/fuzz-smoke.sh || fuzz=1  # libFuzzer smoke run, 60 s per target (SKIPPED without clang)
if [ "$format" -ne 0 ]; then
  echo "relpos: the formatting check failed (files listed above)" >&2
fi
exit $((format | tests | fuzz))
