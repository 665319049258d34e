#!/usr/bin/env bash
# The test command: installs what is missing, builds everything, runs every test (ctest), then the
# threaded tests again under ThreadSanitizer and, with the kernels' tests, under AddressSanitizer
# (tools/sanitizer-tests.sh; skipped when arguments for ctest are given, or with
# TESSERA_SANITIZERS=0).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/tools/install-deps.sh"
"$here/tools/build.sh" -DTESSERA_FUZZ=ON
(cd "${TESSERA_BUILD_DIR:-$here/build}" && ctest --output-on-failure -j "${TESSERA_JOBS:-$(nproc)}" "$@")
if [ $# -eq 0 ] && [ "${TESSERA_SANITIZERS:-1}" != 0 ]; then
  "$here/tools/sanitizer-tests.sh" thread
  "$here/tools/sanitizer-tests.sh" address
fi
