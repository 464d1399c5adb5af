#!/usr/bin/env bash
# The test command: installs missing packages, builds, and runs every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh "$@"
cd build
ctest --output-on-failure -j"$(nproc)"
../tools/fuzz-smoke.sh  # libFuzzer smoke run, 60 s per target (SKIPPED without clang)
