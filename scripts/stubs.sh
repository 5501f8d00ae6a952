#!/usr/bin/env bash
# python/fxinplace/_C/*.pyi (one stub per submodule of the extension) are
# generated from the built extension (pybind11-stubgen); the methods pybind11 gives every
# enum are then written once, in _C/_pybind_enum.pyi, and a long type that annotates several
# parameters once, as an alias (scripts/stub_dedup.py).
#   bash scripts/stubs.sh          regenerate them
#   bash scripts/stubs.sh --check  fail when the checked-in stubs are out of date
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
.venv/bin/pybind11-stubgen fxinplace._C -o "$out" >/dev/null
.venv/bin/ruff format -q "$out/fxinplace/_C"
.venv/bin/python scripts/stub_dedup.py "$out/fxinplace/_C"
.venv/bin/ruff format -q "$out/fxinplace/_C"
if [ "${1:-}" = "--check" ]; then
  if ! diff -ru python/fxinplace/_C "$out/fxinplace/_C"; then
    echo "python/fxinplace/_C/*.pyi are out of date: run bash scripts/stubs.sh" >&2
    exit 1
  fi
else
  rm -rf python/fxinplace/_C
  cp -r "$out/fxinplace/_C" python/fxinplace/_C
fi
