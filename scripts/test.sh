#!/usr/bin/env bash
# Sets everything up, then runs every test: GoogleTest (ctest) for the
# torch-free core, pytest for the Python side.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

cmake -S . -B build/cpp -DFXINPLACE_BUILD_PYTHON=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/cpp -j "$(nproc)"
ctest --test-dir build/cpp --output-on-failure

.venv/bin/python -m pytest -q "$@"
