#!/usr/bin/env bash
# Download, here (with a package index), the wheels the GPU machine's image lacks, into the ignored
# folder .whl/ of the repository root; showcase.sh installs them there with pip --no-index.
# The image has torch 2.11, transformers, pandas, pyarrow, scipy, typer, rich, nvidia-ml-py and
# tensorboard (and typing-extensions, carried anyway: pydantic 2.14 needs >= 4.16) on Python 3.12.
#
#   bash scripts/device/fetch-wheels.sh [PYTHON]      # PYTHON: the interpreter whose pip downloads
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PY=${1:-python3}
mkdir -p .whl
"$PY" -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any -d .whl \
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
  typing-extensions==4.16.0 tbparse==0.0.9 megatron-core==0.19.2 msgspec==0.23.0 ruptures==1.1.10
ls -l .whl
