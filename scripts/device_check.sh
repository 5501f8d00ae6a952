#!/usr/bin/env bash
# The compile paths on a GPU (run on a lent GPU machine by hand, never in CI: CI has no GPU).
# Builds fxinplace._C against that machine's own torch (its python3), then runs issue 15's
# programs and the frozen random-run findings (benchmarks/compile_on_device.py), and random
# programs through the Inductor hook on CUDA, where Inductor generates Triton kernels whose
# fusion the CPU runs never see (benchmarks/run_random_compile.py --device cuda).
#
#   bash scripts/device_check.sh OUT_DIR [COUNT] [SECONDS] [JOBS]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/device_check}
count=${2:-400}
seconds=${3:-300}
jobs=${4:-12}
mkdir -p "$out"
PY=$(command -v "${PYTHON:-python3}")
"$PY" -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
started=$(date +%s)
# An editable install: the extension built against this machine's torch, and the entry point
# that lets torch.compile find backend="fxinplace" by name.
if ! "$PY" -m pip install --no-index --no-deps --no-build-isolation -e . >"$out/build.log" 2>&1; then
  grep -E "error|Error" -A3 "$out/build.log" | head -80
  exit 1
fi
echo "built in $(($(date +%s) - started)) s"
# One compile thread per worker: the campaign already runs a process per core.
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_COMPILE_THREADS=1
quiet() { grep -v -E '^[EWVI][0-9]{4} |Warning|warn\(' ; }
"$PY" benchmarks/compile_on_device.py cuda 2>&1 | quiet | tee "$out/issue15.log"
# --time-limit: the run stops taking programs in time to print its totals and failure groups;
# the outer timeout only guards against a program that hangs.
timeout $((seconds + 120)) "$PY" benchmarks/run_random_compile.py --count "$count" --path hook \
  --device cuda --jobs "$jobs" --no-families --progress 25 --time-limit "$seconds" 2>&1 |
  quiet | tee "$out/hook.log" | tail -120
