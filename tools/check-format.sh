#!/usr/bin/env bash
# Checks that every tracked C++ and CUDA file is formatted as .clang-format says
# (clang-format 14, Debian 12's). Prints the files that are not and exits 1;
# `clang-format -i FILE...` fixes them. Called by tools/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
formatter=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$formatter" ]; then
  echo "check-format: clang-format is not installed (tools/install-deps.sh installs it)" >&2
  exit 1
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
else  # an export without git: the same folders, build folders left out
  mapfile -t files < <(find . -path './build*' -prune -o -type f \
    \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print | sed 's|^\./||' | sort)
fi
off=()
for file in "${files[@]}"; do
  "$formatter" --dry-run -Werror "$file" >/dev/null 2>&1 || off+=("$file")
done
if [ ${#off[@]} -eq 0 ]; then
  echo "check-format: ${#files[@]} files follow .clang-format"
  exit 0
fi
printf 'check-format: not formatted: %s\n' "${off[@]}"
echo "check-format: ${#off[@]} of ${#files[@]} files differ from .clang-format" \
  "($("$formatter" --version | sed 's/.*version //')); fix with: clang-format -i FILE..."
exit 1
