#!/usr/bin/env bash
# The C++ core and the extension under AddressSanitizer and UndefinedBehaviorSanitizer
# (-fsanitize=address,undefined): ctest, then a bounded pytest subset and random programs
# with the ASan runtime preloaded into Python. Any report fails the run (halt_on_error).
#   bash scripts/sanitize.sh            (after scripts/setup.sh; scripts/test.sh runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=$(nproc)
SAN_OPTS=(-DFXINPLACE_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo)

echo "[sanitize] the torch-free core and its GoogleTests"
cmake -S . -B build/asan-cpp -DFXINPLACE_BUILD_PYTHON=OFF "${SAN_OPTS[@]}" >/dev/null
cmake --build build/asan-cpp -j "$JOBS" >/dev/null
ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan-cpp --output-on-failure | tail -3

echo "[sanitize] the extension (a copy of the package with the sanitized _C)"
PKG=build/asan-py
rm -rf "$PKG" && mkdir -p "$PKG"
cp -r python/fxinplace "$PKG/"
rm -f "$PKG"/fxinplace/_C*.so
cmake -S . -B build/asan-ext -DFXINPLACE_BUILD_TESTS=OFF "${SAN_OPTS[@]}" \
  -DPython3_EXECUTABLE="$ROOT/.venv/bin/python" -DCMAKE_LIBRARY_OUTPUT_DIRECTORY="$ROOT/$PKG/fxinplace" >/dev/null
cmake --build build/asan-ext --target _C -j "$JOBS" >/dev/null

# Python and torch are not instrumented: leaks are theirs (detect_leaks=0), and their
# allocations cross into ours, so allocation/deallocation pairing is not checked.
export LD_PRELOAD="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libubsan.so)"
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:alloc_dealloc_mismatch=0:new_delete_type_mismatch=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export PYTHONPATH="$ROOT/$PKG"
.venv/bin/python -c "import fxinplace._C as c, sys; assert c.__file__.startswith('$ROOT/$PKG'), c.__file__"
echo "[sanitize] pytest subset: planner, checker, functionalization, random programs (bounded)"
.venv/bin/python -m pytest -q -p no:cacheprovider -x \
  test/python/reinplace/test_reinplace_regressions.py test/python/reinplace/test_reinplace_random_regressions.py \
  test/python/checker/test_check_reinplaced.py \
  test/python/functionalize/test_functionalize_api.py test/python/functionalize/test_functionalize_input_metadata.py \
  test/python/functionalize/test_functionalize_write_rules.py test/python/functionalize/test_functionalize_overlap_rules.py \
  test/python/functionalize/test_functionalize_view_chains.py \
  test/python/reinplace/test_reinplace_auto_functionalized.py test/python/reinplace/test_random_programs.py
echo "[sanitize] clean"
