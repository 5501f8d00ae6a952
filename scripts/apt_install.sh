#!/usr/bin/env bash
# Installs the given Debian packages with apt-get, as root or through sudo.
# Does nothing when called with no package names.
set -euo pipefail
[ $# -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  run_as_root=(env DEBIAN_FRONTEND=noninteractive)
elif command -v sudo >/dev/null; then
  run_as_root=(sudo env DEBIAN_FRONTEND=noninteractive)
else
  echo "fxinplace setup: need root or sudo to install: $*" >&2
  exit 1
fi
echo "[setup] apt-get install $*"
"${run_as_root[@]}" apt-get update -qq
"${run_as_root[@]}" apt-get install -y -qq "$@" >/dev/null
