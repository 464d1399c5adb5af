#!/usr/bin/env bash
# Installs the Debian 12 packages relpos needs, only those that are missing.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libopenblas-openmp-dev   # BLAS, OpenMP build (its threads are our OpenMP threads)
  libdnnl-dev              # oneDNN: f32 and bf16 matrix products (docs/bf16.md)
  libyaml-cpp-dev          # configs
  libhdf5-dev              # checkpoints
  catch2                   # tests (Catch2 v2)
  libcli11-dev             # command line
  nlohmann-json3-dev       # metrics and fixtures
  libfmt-dev               # formatting
  python3-matplotlib       # figures (tools/plot.py; relpos runs without it)
  python3-h5py             # tools/load_checkpoint.py and its test
  clang                    # the libFuzzer smoke run of the test command (tools/fuzz-smoke.sh)
  clang-format             # the formatting check (tools/check-format.sh)
  openmpi-bin libopenmpi-dev  # data-parallel training under mpirun (docs/distributed.md)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "relpos: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "relpos: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
