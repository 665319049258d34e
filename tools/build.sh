#!/usr/bin/env bash
# Configures and builds Tessera into build/ (Release, Ninja). Extra arguments go to cmake.
# TESSERA_TARGETS: the targets to build (space-separated; default: all, the tests included).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${TESSERA_BUILD_DIR:-$here/build}
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DTESSERA_PYTHON="${TESSERA_VENV:-$here/.venv}/bin/python" "$@" >/dev/null
targets=()
for t in ${TESSERA_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j "${TESSERA_JOBS:-$(nproc)}" "${targets[@]}"
