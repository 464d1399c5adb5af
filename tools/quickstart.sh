#!/usr/bin/env bash
# The main job: installs missing packages, builds, and trains configs/quickstart.yaml
# on the bundled corpus. Extra arguments are passed to `relpos train` (e.g. overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh
exec build/train/relpos train configs/quickstart.yaml "$@"
