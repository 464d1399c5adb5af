#!/usr/bin/env bash
# Installs oneDNN 3.2 from PyPI (onednn-devel-cpu-gomp: headers, libdnnl.so.3, its CMake
# config) into a Python virtual environment, for the optional build of relpos against it
# (bench/results/onednn3.md). relpos does not need it: the default build uses Debian's
# oneDNN 2.6 (libdnnl-dev), and CMake only looks here when told to.
#
#   tools/install-onednn3.sh              # into .venv-onednn3/ in the repository (gitignored)
#   RELPOS_ONEDNN3_VENV=/some/dir tools/install-onednn3.sh
#
# Then configure a build directory of its own with -DRELPOS_ONEDNN_PREFIX=<venv>, e.g.
#   cmake -S . -B build-onednn3 -DCMAKE_BUILD_TYPE=Release -DRELPOS_ONEDNN_PREFIX=$PWD/.venv-onednn3
# Why this package: it is oneDNN built with GNU OpenMP (libgomp), the runtime of relpos's own
# loops. PyPI's newer `onednn`/`onednn-devel` (2026.1, oneDNN 3.13) links TBB and SYCL
# (libtbb.so.12, libsycl.so.9, Intel's compiler runtime): a second thread pool beside
# libgomp, and measured no faster (bench/results/onednn3.md, run 6). The venv is made from
# Debian's /usr/bin/python3; pip runs only inside it (about 180 MB). Running the script
# again with the package installed does nothing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${RELPOS_ONEDNN3_VENV:-$root/.venv-onednn3}"
package=onednn-devel-cpu-gomp
version=2023.2.0
# shellcheck source=tools/pypi-venv.sh
source "$root/tools/pypi-venv.sh"
pypi_venv_install install-onednn3 "$venv" "$package" "$version" "$package==$version" "about 40 MB" \
  include/oneapi/dnnl/dnnl.hpp lib/libdnnl.so.3 lib/cmake/dnnl/dnnl-config.cmake
echo "install-onednn3: configure with -DRELPOS_ONEDNN_PREFIX=$venv"
