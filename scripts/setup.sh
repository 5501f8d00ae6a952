#!/usr/bin/env bash
# Sets up what fxinplace needs to build and run on a fresh machine: a C++
# compiler and CMake (apt, only when missing), a virtualenv with torch==2.13.0,
# and the package itself. GoogleTest is only needed by the tests, so
# scripts/test.sh installs it (scripts/apt_install.sh), not this script.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v g++ >/dev/null || need+=(g++)
bash scripts/apt_install.sh "${need[@]}"

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $PY"
  "$PY" -m venv .venv
fi
echo "[setup] installing torch==2.13.0 and the test tools into .venv (first time: a few minutes)"
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install -q torch==2.13.0 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -m pip install -q pytest pytest-xdist tqdm ruff clang-format build pybind11-stubgen==3.0.0 "transformers>=4.40" matplotlib 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"
echo "[setup] building fxinplace (C++ extension) against that torch"
# --no-build-isolation: build against the torch above instead of fetching another.
.venv/bin/python -m pip install -q --no-build-isolation -e . 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import fxinplace._C"
echo "[setup] done"
