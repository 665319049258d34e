#!/usr/bin/env bash
# tools/gpu/bundle_check.sh BUNDLE_DIR (or `tools/gpu/check.sh --bundle-only BUNDLE_DIR`): proves a
# bundle made by tools/gpu/bundle.sh starts on its own, without a GPU: every ELF resolves its
# libraries, then `tessera plugins`, `tessera bench model`, the bundled op tests on the emulated
# device and the device check's engine steps
# with the CPU engine (engine_steps.sh) run under `env -i` with only the bundle's lib/ on
# LD_LIBRARY_PATH. Exit 0 when all pass, 1 otherwise.
set -uo pipefail
bundle=$(cd "${1:?usage: bundle_check.sh BUNDLE_DIR}" && pwd)
failed=0
run() {  # run NAME COMMAND...: the bundle's tessera in an empty environment
  local name=$1
  shift
  echo "==> $name"
  if env -i PATH=/usr/bin:/bin HOME=/tmp LD_LIBRARY_PATH="$bundle/lib" "$@"; then
    echo "<== $name: pass"
  else
    echo "<== $name: FAIL (exit $?)"
    failed=1
  fi
}
# Every library must resolve, and to the bundle unless the target provides it (glibc, the
# driver, the CUDA toolkit: the same rule as bundle.sh).
for elf in "$bundle/tessera" "$bundle"/*.so "$bundle"/plugins/*.so "$bundle"/tests/*; do
  [ -e "$elf" ] && [ ! -L "$elf" ] || continue
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    case "$name" in
      linux-vdso* | ld-linux* | libc.so* | libm.so* | libmvec.so* | libdl.so* | libpthread.so* | \
        librt.so* | libutil.so* | libresolv.so* | libcuda.so* | libnvidia-*) continue ;;
    esac
    case "$path" in "$bundle"/* | /usr/local/cuda* | */nvidia/*) continue ;; esac
    echo "$(basename "$elf"): $name resolves to $path, outside the bundle"
    failed=1
  done < <(env -i LD_LIBRARY_PATH="$bundle/lib" ldd "$elf")
done
run "tessera --version" "$bundle/tessera" --version
run "tessera plugins" "$bundle/tessera" plugins
run "tessera bench model" "$bundle/tessera" bench model --preset flash --gpus 8 --gpu h200 --batch 1,64
# The bundled op tests find the device modules and run the emulated backend (check.sh runs the
# GPU one).
for test in device_ops_test device_moe_ops_test device_compressor_ops_test; do
  if [ -x "$bundle/tests/$test" ]; then
    run "$test (emulated)" "$bundle/tests/$test" --gtest_filter='Backends/*/emulated:GpuBackend.*'
  fi
done
if [ -x "$bundle/tests/device_communicator_test" ]; then
  run "device_communicator_test (emulated)" "$bundle/tests/device_communicator_test" \
    --gtest_filter='*/emulated'
fi
# The engine steps of the device check with the CPU engine (tools/gpu/engine_steps.sh): generate
# on the shipped model, a reduced Flash-shaped checkpoint and `tessera bench device` on it.
run "engine steps (cpu)" bash "$(dirname "$0")/engine_steps.sh" "$bundle" "$(mktemp -d)" cpu
if [ "$failed" = 0 ]; then echo "bundle check: pass ($bundle)"; else echo "bundle check: FAIL"; fi
exit "$failed"
