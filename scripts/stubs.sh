#!/usr/bin/env bash
# python/fxinplace/_C.pyi is generated from the built extension (pybind11-stubgen).
#   bash scripts/stubs.sh          regenerate it
#   bash scripts/stubs.sh --check  fail when the checked-in stub is out of date
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
.venv/bin/pybind11-stubgen fxinplace._C -o "$out" >/dev/null
.venv/bin/ruff format -q "$out/fxinplace/_C.pyi"
if [ "${1:-}" = "--check" ]; then
  if ! diff -u python/fxinplace/_C.pyi "$out/fxinplace/_C.pyi"; then
    echo "python/fxinplace/_C.pyi is out of date: run bash scripts/stubs.sh" >&2
    exit 1
  fi
else
  cp "$out/fxinplace/_C.pyi" python/fxinplace/_C.pyi
fi
