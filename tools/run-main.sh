#!/usr/bin/env bash
# The main job: installs what is missing, builds the binary and the plugins (not the tests), and
# serves the shipped tiny DeepSeek-V4 model (models/tiny-dsv4) with the plugins named in
# configs/tiny-cpu.toml behind the OpenAI-compatible HTTP frontend. Ctrl-C (SIGINT) or SIGTERM
# drains and exits. Extra arguments go to `tessera serve`.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/tools/install-deps.sh"
TESSERA_TARGETS=tessera_and_plugins "$here/tools/build.sh"  # not the tests
cd "$here"
cat <<'MSG'
Serving models/tiny-dsv4 on http://127.0.0.1:8000 (OpenAI-compatible) and gRPC 127.0.0.1:50051. Try:
  curl -s http://127.0.0.1:8000/v1/chat/completions -H 'Content-Type: application/json' \
    -d '{"model":"tiny-dsv4","messages":[{"role":"user","content":"What does the word grace mean?"}],"max_tokens":60}'
MSG
exec "${TESSERA_BUILD_DIR:-$here/build}/tessera" serve -c configs/tiny-cpu.toml "$@"
