#!/usr/bin/env bash
# tools/gpu/bundle.sh: packs what CI built into one directory (and a .tar.gz) that runs on a
# machine without Debian libraries, e.g. the lent GPU machine: the `tessera` binary, the plugins,
# the CUDA device modules (when built) and every shared library they need that is not part of
# the C runtime or the NVIDIA driver / CUDA toolkit (those the target machine has).
#
#   tools/gpu/bundle.sh [BUILD_DIR (build)] [OUT_DIR (build-bundle)]
#
# Layout (the binary finds plugins/ and the CUDA modules beside itself):
#   tessera-bundle/tessera, libtessera_cuda*.so, libtessera_emulator.so, plugins/*.so, lib/*.so,
#   tests/ (device tests, with links to the CUDA modules), run.sh (sets LD_LIBRARY_PATH=lib and runs tessera), MANIFEST (files, bytes, sha256)
# Then tools/gpu/check.sh --bundle-only OUT_DIR/tessera-bundle proves it starts (no GPU needed).
# Fails when a library is missing or the tarball exceeds 64 MiB (the device tool's carry limit).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
out=${2:-$here/build-bundle}
limit=$((64 << 20))
bundle=$out/tessera-bundle
rm -rf "$bundle"
mkdir -p "$bundle/plugins" "$bundle/lib"

[ -x "$build/tessera" ] || { echo "bundle: $build/tessera not built" >&2; exit 1; }
cp "$build/tessera" "$bundle/"
cp "$build"/plugins/*.so "$bundle/plugins/"
# Plugins' own CUDA modules (docs/plugins.md, "Plugins with device code") and, when built, the
# tests of their device paths (run by tools/gpu/check.sh with TESSERA_BUNDLE).
if compgen -G "$build/plugins/cuda/*.so" >/dev/null; then
  mkdir -p "$bundle/plugins/cuda"
  cp "$build"/plugins/cuda/*.so "$bundle/plugins/cuda/"
fi
for test in kvcache_bf16_device_test kvcache_fp8_device_test attention_conformance_device_test; do
  if [ -x "$build/tests/cuda/$test" ]; then
    mkdir -p "$bundle/tests"
    cp "$build/tests/cuda/$test" "$bundle/tests/"
  fi
done
# The device layer's tests (tests/unit): every kernel of core/cuda against the cpu backend, on
# each backend the build finds (the emulated device, and a GPU where present), and the device
# collectives (NCCL with one rank on a GPU).
for test in device_ops_test device_moe_ops_test device_compressor_ops_test device_communicator_test \
  device_graph_test; do
  if [ -x "$build/tests/$test" ]; then
    mkdir -p "$bundle/tests"
    cp "$build/tests/$test" "$bundle/tests/"
  fi
done
for module in libtessera_cuda.so libtessera_cuda_emulated.so libtessera_emulator.so; do
  found=$(find "$build" -name "$module" -not -path "*/tests/*" -print -quit)
  if [ -n "$found" ]; then
    cp "$found" "$bundle/"
    # open_device looks beside the executable: the bundled tests find the modules through links.
    if [ -d "$bundle/tests" ]; then ln -sf "../$module" "$bundle/tests/$module"; fi
  fi
done

# Libraries the target provides: glibc's (libc, libm, libmvec, libdl, libpthread, librt, ld-linux,
# libutil, libresolv), the driver's (libcuda, libnvidia-*) and the CUDA toolkit's (cudart, cuBLAS,
# NCCL: under /usr/local/cuda* or a pip "nvidia" tree).
provided() {
  case "$(basename "$1")" in
    linux-vdso* | ld-linux* | libc.so* | libm.so* | libmvec.so* | libdl.so* | libpthread.so* | \
      librt.so* | libutil.so* | libresolv.so* | libcuda.so* | libnvidia-*) return 0 ;;
  esac
  case "$2" in /usr/local/cuda* | */nvidia/*) return 0 ;; esac
  return 1
}

missing=0
for elf in "$bundle/tessera" "$bundle"/*.so "$bundle"/plugins/*.so "$bundle"/plugins/cuda/*.so \
  "$bundle"/tests/*; do
  [ -e "$elf" ] && [ ! -L "$elf" ] || continue
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    if [ "$path" = "not" ]; then
      provided "$name" "" || { echo "bundle: $(basename "$elf") needs $name: not found" >&2; missing=1; }
      continue
    fi
    provided "$name" "$path" && continue
    [ -e "$bundle/lib/$name" ] || cp -L "$path" "$bundle/lib/$name"
  done < <(LD_LIBRARY_PATH="$build:${LD_LIBRARY_PATH:-}" ldd "$elf")
done
[ "$missing" = 0 ] || exit 1
if command -v strip >/dev/null; then
  find "$bundle" -type f \( -name "*.so*" -o -name tessera -o -name "*_test" \) \
    -exec strip --strip-unneeded {} +
fi

cat >"$bundle/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the bundled tessera with only the bundle's libraries added to the search path.
dir=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$dir/tessera" "$@"
RUN
chmod +x "$bundle/run.sh"
commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
(cd "$bundle" && {
  echo "tessera bundle, commit $commit, built $(date -u '+%Y-%m-%d %H:%M UTC')"
  find . -type f ! -name MANIFEST | sort | while read -r f; do
    echo "$(stat -c %s "$f") $(sha256sum "$f" | cut -d' ' -f1) $f"
  done
} >MANIFEST)
tar -C "$out" -czf "$out/tessera-bundle.tar.gz" tessera-bundle
bytes=$(stat -c %s "$out/tessera-bundle.tar.gz")
echo "bundle: $bundle ($(du -sh "$bundle" | cut -f1)), $out/tessera-bundle.tar.gz ($bytes bytes)"
echo "bundle: libraries: $(ls "$bundle/lib" | tr '\n' ' ')"
if [ "$bytes" -gt "$limit" ]; then
  echo "bundle: tarball over 64 MiB" >&2
  exit 1
fi
