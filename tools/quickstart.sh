#!/usr/bin/env bash
# The main job: installs missing packages, builds the relpos executable and trains
# configs/quickstart.yaml on the bundled corpus. Extra arguments are passed to
# `relpos train` (e.g. overrides). Only the executable is built, with the configure
# options tools/test.sh uses, so that tools/test.sh later adds the tests and
# benchmarks in the same build/ without recompiling anything.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh --target relpos_cli
exec build/train/relpos train configs/quickstart.yaml "$@"
