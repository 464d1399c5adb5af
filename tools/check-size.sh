#!/usr/bin/env bash
# The size gate: fails, naming each one, when a tracked C++ or CUDA file is over 600
# lines, except the tables and generated files listed below (each with its reason).
# A file that grows past the limit is split by what it holds, not excepted.
# Called by tools/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=600
# path: why it may be longer (a table or a generated file, one entry per line)
excepted=(
  "tests/backend_op_table.cpp: the op table, one entry per (op, backend) case"
)
is_excepted() {
  local entry
  for entry in "${excepted[@]}"; do
    [ "${entry%%:*}" = "$1" ] && return 0
  done
  return 1
}
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
else  # an export without git: the same folders, build folders left out
  mapfile -t files < <(find . -path './build*' -prune -o -type f \
    \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print | sed 's|^\./||' | sort)
fi
over=0
for file in "${files[@]}"; do
  [ -f "$file" ] || continue  # deleted in the work tree, not yet in the index
  lines=$(wc -l < "$file")
  if [ "$lines" -gt "$limit" ] && ! is_excepted "$file"; then
    echo "check-size: $file has $lines lines (the limit is $limit; split it by what it holds)"
    over=$((over + 1))
  fi
done
if [ "$over" -ne 0 ]; then
  echo "check-size: $over of ${#files[@]} files are over $limit lines" >&2
  exit 1
fi
echo "check-size: ${#files[@]} files within $limit lines (${#excepted[@]} table(s) excepted)"
