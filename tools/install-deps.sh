#!/usr/bin/env bash
# Installs what Tessera needs and is missing: Debian packages for the build, a Python venv with the
# light test tools (openai, grpcio, tokenizers, numpy). Safe to run twice; does nothing when all
# is present. The heavy fixture tools (torch, transformers) are NOT installed here: see
# tools/fixtures/README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

apt_packages=(
  cmake ninja-build g++ pkg-config git
  libboost-dev libtomlplusplus-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev
  libopenblas-dev libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev python3-venv
  libpcre2-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  chromium
)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" = 0 ] || sudo_cmd=sudo
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

venv=${TESSERA_VENV:-$here/.venv}
req=$here/tools/requirements-test.txt
stamp=$venv/.requirements.sha
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "install-deps: preparing Python test venv at $venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q -r "$req"
  echo "$want" >"$stamp"
fi
