#!/usr/bin/env bash
# Builds the sdist and installs it into a fresh virtualenv, as a user would
# (`pip install fxinplace-*.tar.gz --no-build-isolation` next to torch), then
# uses the installed package from outside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "[sdist] building the sdist"
.venv/bin/python -m build --sdist --no-isolation -o "$work/dist" . >/dev/null
echo "[sdist] installing it into a fresh venv"
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q torch==2.13.0 "setuptools>=77" 2>&1 | grep -v "^WARNING: Location" || true
"$work/venv/bin/python" -m pip install -q --no-build-isolation "$work"/dist/fxinplace-*.tar.gz 2>&1 |
  grep -v "^WARNING: Location" || true
cd "$work"
"$work/venv/bin/python" - <<'PY'
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace

assert fxinplace.__file__.startswith(__import__("sys").prefix), fxinplace.__file__
x = torch.randn(4)
gm = make_fx(fxinplace.functionalize(lambda x: (x + 1).relu()))(x)
fxinplace.reinplace(gm, x)
assert "relu_" in gm.code
import pathlib
stubs = pathlib.Path(fxinplace.__file__).parent / "_C"
assert {p.name for p in stubs.glob("*.pyi")} >= {"__init__.pyi", "planner.pyi", "checker.pyi"}, stubs
assert fxinplace._C.planner.GraphBuilder and fxinplace._C.__file__.endswith(".so")  # the extension, not the stubs
print(f"[sdist] fxinplace {fxinplace.__version__} installed from the sdist and working, with its stubs")
PY
"$work/venv/bin/python" - <<'PY'
import sys

import torch

# No import of fxinplace: the torch_dynamo_backends entry point names the backend.
f = torch.compile(lambda x: (x + 1).sin(), backend="fxinplace")
x = torch.arange(3.0)
assert torch.allclose(f(x), (x + 1).sin())
assert "fxinplace.compile" in sys.modules
print("[sdist] torch.compile(backend='fxinplace') found by name, with no import")
PY
