#!/usr/bin/env bash
# Installs the Debian 12 packages relpos needs, only those that are missing.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libopenblas-openmp-dev   # BLAS, OpenMP build (its threads are our OpenMP threads)
  libdnnl-dev              # oneDNN: f32 and bf16 matrix products (docs/bf16.md)
  ocl-icd-opencl-dev       # OpenCL headers and loader: Debian's oneDNN CMake config requires them
  libyaml-cpp-dev          # configs
  libhdf5-dev              # checkpoints
  catch2                   # tests (Catch2 v2)
  libcli11-dev             # command line
  nlohmann-json3-dev       # metrics and fixtures
  libfmt-dev               # formatting
  libboost-dev             # Boost.Math: Student t quantiles (the ablation report's intervals)
  libsentencepiece-dev     # SentencePiece tokenizers (data.tokenizer, relpos tokenizer train)
  python3-matplotlib       # figures (tools/plot.py; relpos runs without it)
  python3-h5py             # tools/load_checkpoint.py and its test
  python3-torch            # PyTorch 1.13 for /usr/bin/python3: the export round-trip test (docs/export.md)
  clang                    # the libFuzzer smoke run of the test command (tools/fuzz-smoke.sh)
  clang-format             # the formatting check (tools/check-format.sh)
  openmpi-bin libopenmpi-dev  # data-parallel training under mpirun (docs/distributed.md)
)

exec "$(dirname "$0")/apt-install.sh" "${packages[@]}"
