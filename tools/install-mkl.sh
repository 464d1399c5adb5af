#!/usr/bin/env bash
# Installs Intel's oneMKL from PyPI (mkl-devel: headers, shared libraries, MKLConfig.cmake)
# into a Python virtual environment, for the optional MKL GEMM probe
# (bench/gemm_mkl_bench.cpp, bench/results/gemm-mkl.md). relpos does not need it: the
# default build uses OpenBLAS and oneDNN, and CMake only looks for MKL under this prefix.
#
#   tools/install-mkl.sh              # into .venv-mkl/ in the repository (gitignored)
#   RELPOS_MKL_VENV=/some/dir tools/install-mkl.sh
#   RELPOS_MKL_SPEC='mkl-devel==2025.3.0' tools/install-mkl.sh   # the version to install
#
# Then configure with -DRELPOS_MKL_PREFIX=<venv> (tools/build.sh passes configure arguments
# on). The venv is made from Debian's /usr/bin/python3; pip runs only inside it (about
# 1 GB). Running the script again with the wanted version installed does nothing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${RELPOS_MKL_VENV:-$root/.venv-mkl}"
spec="${RELPOS_MKL_SPEC:-mkl-devel==2025.3.0}"
base_python=/usr/bin/python3

"$root/tools/apt-install.sh" python3 python3-venv  # Debian's python3, its venv and ensurepip

if [ ! -x "$venv/bin/python" ]; then
  echo "install-mkl: creating $venv"
  "$base_python" -m venv "$venv"
fi

wanted="${spec#*==}"
[ "$wanted" = "$spec" ] && wanted=""
installed="$("$venv/bin/python" -m pip show mkl-devel 2>/dev/null | sed -n "s/^Version: //p" || true)"
if [ -n "$installed" ] && { [ -z "$wanted" ] || [ "$installed" = "$wanted" ]; }; then
  echo "install-mkl: $venv has mkl-devel $installed"
  exit 0
fi

echo "install-mkl: installing $spec into $venv (PyPI; about 1 GB)"
"$venv/bin/python" -m pip install --disable-pip-version-check "$spec"
if [ ! -f "$venv/include/mkl_cblas.h" ]; then
  echo "install-mkl: $venv/include/mkl_cblas.h is missing after the install" >&2
  exit 1
fi
echo "install-mkl: done; configure with -DRELPOS_MKL_PREFIX=$venv"
