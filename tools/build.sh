#!/usr/bin/env bash
# Installs missing packages, then configures and builds relpos in build/ (Release).
# Usage: tools/build.sh [--target NAME]... [CMake configure arguments]
# Without --target it builds everything: the relpos executable, the tests, the
# benchmarks and, when nvcc is found, the CUDA backend. Configure arguments such
# as -DRELPOS_CUDA=OFF are kept in build/ for the next builds.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
while [ $# -ge 2 ] && [ "$1" = --target ]; do
  targets+=(--target "$2")
  shift 2
done
tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j"$(nproc)" "${targets[@]}"
