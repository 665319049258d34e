#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the shipped tiny DeepSeek-V4 model
# (models/tiny-dsv4) through the configured plugins (configs/tiny-cpu.toml). Extra arguments are
# passed to `tessera generate` (e.g. --temperature 0 --max-tokens 64).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/tools/install-deps.sh"
"$here/tools/build.sh"
cd "$here"
exec "${TESSERA_BUILD_DIR:-$here/build}/tessera" generate -c configs/tiny-cpu.toml --chat \
  --prompt "${TESSERA_PROMPT:-What does the word grace mean?}" --max-tokens 120 "$@"
