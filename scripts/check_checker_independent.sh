#!/usr/bin/env bash
# The checker shares no code with the planner it checks (csrc/checker/ is its
# own library): every header a checker file includes is a checker file or a
# system header, and the CMake target links nothing of the planner.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
while IFS= read -r line; do
  file=${line%%:*}
  header=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"${line#*:}")
  if [ ! -f "csrc/checker/$header" ]; then
    echo "checker independence: $file includes \"$header\", which is not a checker file" >&2
    bad=1
  fi
done < <(grep -H '#include "' csrc/checker/*.h csrc/checker/*.cpp)
links=$(sed -n '/target_link_libraries(fxinplace_checker /p' CMakeLists.txt)
if [ -n "$links" ]; then
  echo "checker independence: fxinplace_checker links something: $links" >&2
  bad=1
fi
# fxinplace_add_tests(<target> <the one library it links> <sources>...)
tests=$(grep -E '^ *fxinplace_add_tests\(fxinplace_checker_tests ' CMakeLists.txt || true)
if [ "$(awk '{print $2}' <<<"$tests")" != "fxinplace_checker" ]; then
  echo "checker independence: the checker's tests must link fxinplace_checker alone: ${tests:-not found}" >&2
  bad=1
fi
[ "$bad" = 0 ] && echo "checker independence: ok"
exit "$bad"
