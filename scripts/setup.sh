#!/usr/bin/env bash
# Sets up everything fxinplace needs on a fresh machine: system packages
# (GoogleTest, CMake), a virtualenv with torch==2.13.0, and the package itself.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
[ -f /usr/include/gtest/gtest.h ] || need_apt+=(libgtest-dev)
command -v cmake >/dev/null || need_apt+=(cmake)
command -v g++ >/dev/null || need_apt+=(g++)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install -q torch==2.13.0 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -m pip install -q pytest tqdm ruff clang-format "transformers>=4.40" 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"
# --no-build-isolation: build against the torch above instead of fetching another.
.venv/bin/python -m pip install -q --no-build-isolation -e . 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import fxinplace._C"
