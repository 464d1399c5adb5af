#!/usr/bin/env bash
# Creates the Python virtual environment with PyTorch 2.x from PyPI that
# bench/train_throughput.py compares relpos with (bench/README.md).
#
#   tools/torch-venv.sh            # into .venv-torch/ in the repository (gitignored)
#   RELPOS_TORCH_VENV=/some/dir tools/torch-venv.sh
#   RELPOS_TORCH_SPEC='torch==2.15.0' tools/torch-venv.sh   # the version to install
#
# The venv is made from Debian's /usr/bin/python3 (python3-venv is installed
# through apt when it is missing); pip runs only inside the venv. PyPI's Linux
# x86-64 wheel of torch is the CUDA build (several GB with its nvidia-* wheels);
# on the CPU it runs MKL and oneDNN. Running the script again with the wanted
# version already installed does nothing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${RELPOS_TORCH_VENV:-$root/.venv-torch}"
spec="${RELPOS_TORCH_SPEC:-torch==2.15.0}"
base_python=/usr/bin/python3

"$root/tools/apt-install.sh" python3 python3-venv  # Debian's python3, its venv and ensurepip

if [ ! -x "$venv/bin/python" ]; then
  echo "torch-venv: creating $venv"
  "$base_python" -m venv "$venv"
fi

# Installed already: the spec's version (or any version, for a spec without one).
wanted="${spec#*==}"
[ "$wanted" = "$spec" ] && wanted=""
installed="$("$venv/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null || true)"
if [ -n "$installed" ] && { [ -z "$wanted" ] || [ "$installed" = "$wanted" ]; }; then
  echo "torch-venv: $venv has torch $installed"
  exit 0
fi

echo "torch-venv: installing $spec into $venv (PyPI; several GB)"
"$venv/bin/python" -m pip install --disable-pip-version-check "$spec"
"$venv/bin/python" -c 'import torch; print("torch-venv: torch", torch.__version__, "in", torch.__file__)'
