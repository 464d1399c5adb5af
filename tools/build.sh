#!/usr/bin/env bash
# Installs missing packages, then configures and builds relpos in build/ (Release).
# Extra arguments go to the CMake configure step, e.g. -DRELPOS_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j"$(nproc)"
