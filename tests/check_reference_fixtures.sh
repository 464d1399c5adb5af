#!/usr/bin/env bash
# Regenerates the PyTorch reference fixtures into a temporary folder and checks
# that they equal the committed ones byte for byte. Exit 77 (skipped) when
# PyTorch is not installed for /usr/bin/python3.
set -euo pipefail
source_dir=$1
python=/usr/bin/python3
if ! "$python" -c "import torch" 2>/dev/null; then
  echo "SKIPPED: PyTorch is not installed for $python (apt-get install python3-torch)"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$python" "$source_dir/tools/reference/positions_reference.py" --out "$out/positions" >/dev/null
diff -r "$out/positions" "$source_dir/tests/fixtures/positions"
"$python" "$source_dir/tools/reference/optim_reference.py" --out "$out/optim_reference.json" >/dev/null
cmp "$out/optim_reference.json" "$source_dir/tests/fixtures/optim/optim_reference.json"
echo "reference fixtures reproduce byte for byte"
