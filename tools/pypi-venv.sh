# shellcheck shell=bash
# Sourced by tools/install-mkl.sh and tools/install-onednn3.sh: one PyPI package in a
# virtual environment made from Debian's /usr/bin/python3 (pip runs only inside it).
#   pypi_venv_install TOOL VENV PACKAGE VERSION SPEC SIZE FILE...
# installs SPEC (pip's requirement) unless PACKAGE is installed there at VERSION (any
# version when VERSION is empty), then checks that every FILE (relative to VENV) exists.
# SIZE is what the download is said to be in the progress line.
pypi_venv_install() {
  local tool=$1 venv=$2 package=$3 version=$4 spec=$5 size=$6
  shift 6
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  "$root/tools/apt-install.sh" python3 python3-venv  # Debian's python3, its venv and ensurepip
  if [ ! -x "$venv/bin/python" ]; then
    echo "$tool: creating $venv"
    /usr/bin/python3 -m venv "$venv"
  fi
  local installed
  installed="$("$venv/bin/python" -m pip show "$package" 2>/dev/null | sed -n "s/^Version: //p" || true)"
  if [ -z "$installed" ] || { [ -n "$version" ] && [ "$installed" != "$version" ]; }; then
    echo "$tool: installing $spec into $venv (PyPI; $size)"
    "$venv/bin/python" -m pip install --disable-pip-version-check "$spec"
    installed="$("$venv/bin/python" -m pip show "$package" 2>/dev/null | sed -n "s/^Version: //p")"
  fi
  local f
  for f in "$@"; do
    if [ ! -e "$venv/$f" ]; then
      echo "$tool: $venv/$f is missing after the install" >&2
      exit 1
    fi
  done
  echo "$tool: $venv has $package $installed"
}
