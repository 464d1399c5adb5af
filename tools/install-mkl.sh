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
wanted="${spec#*==}"
[ "$wanted" = "$spec" ] && wanted=""  # a spec without a version: any installed one will do
# shellcheck source=tools/pypi-venv.sh
source "$root/tools/pypi-venv.sh"
pypi_venv_install install-mkl "$venv" mkl-devel "$wanted" "$spec" "about 1 GB" include/mkl_cblas.h
echo "install-mkl: configure with -DRELPOS_MKL_PREFIX=$venv"
