#!/usr/bin/env bash
# Sets everything up, then runs every test: GoogleTest (ctest) for the
# torch-free core, pytest for the Python side.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# GoogleTest is only needed here (the C++ unit tests), not by the main job.
[ -f /usr/include/gtest/gtest.h ] || bash scripts/apt_install.sh libgtest-dev

# The checker is independent of the planner (its own library; see the script).
bash scripts/check_checker_independent.sh
cmake -S . -B build/cpp -DFXINPLACE_BUILD_PYTHON=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/cpp -j "$(nproc)"
ctest --test-dir build/cpp --output-on-failure

# Style: ruff for Python, clang-format for C++.
.venv/bin/ruff check python test benchmarks
.venv/bin/ruff format --check python test benchmarks
.venv/bin/clang-format --dry-run -Werror csrc/*/*.cpp csrc/*/*.h test/cpp/*.cpp test/cpp/*.h
# The checked-in type stub of the extension matches what it exports.
bash scripts/stubs.sh --check

# One pytest worker per core (pytest-xdist); FXINPLACE_TEST_JOBS=0 runs in this process.
.venv/bin/python -m pytest -q -n "${FXINPLACE_TEST_JOBS:-auto}" --durations=25 "$@"

# Packaging: the sdist builds and installs into a fresh venv.
bash scripts/check_sdist.sh
