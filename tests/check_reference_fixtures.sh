#!/usr/bin/env bash
# Regenerates the PyTorch reference fixtures into a temporary folder and checks
# them against the committed ones with tests/compare_fixtures.py: the same files,
# keys, strings and integers; floats within 1e-12 of their tensor's largest
# magnitude (float64 BLAS results differ in the last bits between OpenBLAS
# kernels). Exit 77 (skipped) when PyTorch is not installed for /usr/bin/python3.
set -euo pipefail
source_dir=$1
python=/usr/bin/python3
if ! "$python" -c "import torch" 2>/dev/null; then
  echo "SKIPPED: PyTorch is not installed for $python (apt-get install python3-torch)"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
compare=("$python" "$source_dir/tests/compare_fixtures.py")
"$python" "$source_dir/tools/reference/positions_reference.py" --out "$out/positions" >/dev/null
"$python" "$source_dir/tools/reference/temperature_reference.py" --out "$out/temperature" >/dev/null
"$python" "$source_dir/tools/reference/optim_reference.py" --out "$out/optim_reference.json" >/dev/null
status=0
"${compare[@]}" "$out/positions" "$source_dir/tests/fixtures/positions" || status=1
"${compare[@]}" "$out/temperature" "$source_dir/tests/fixtures/temperature" || status=1
"${compare[@]}" "$out/optim_reference.json" \
  "$source_dir/tests/fixtures/optim/optim_reference.json" || status=1
[ "$status" -eq 0 ] && echo "reference fixtures reproduce (floats to a relative 1e-12)"
exit "$status"
