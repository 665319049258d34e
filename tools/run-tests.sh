#!/usr/bin/env bash
# The test command: installs what is missing, builds everything, runs every test (ctest).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/tools/install-deps.sh"
"$here/tools/build.sh" -DTESSERA_FUZZ=ON
cd "${TESSERA_BUILD_DIR:-$here/build}"
ctest --output-on-failure -j "${TESSERA_JOBS:-$(nproc)}" "$@"
