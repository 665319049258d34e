#!/usr/bin/env bash
# tools/gpu/check.sh: the one command for a machine with an NVIDIA GPU (nvcc, CMake, ninja,
# python3; no Debian libraries needed). Builds the mma plugin, its tests and the kernel benchmark
# from this checkout (tools/gpu/CMakeLists.txt), runs every GPU test (also under
# compute-sanitizer when present) and the benchmarks (attention kernels; FP8 GEMM against
# cuBLASLt), and writes a markdown report to
# $OUT/gpu_results.md (and stdout). With TESSERA_BUNDLE also the engine on the GPU
# (tools/gpu/engine_steps.sh: the shipped model per attention x kv pair against the CPU engine,
# `tessera bench device` on a Flash-shaped checkpoint). Budget: about eight minutes on an H200.
#
# Environment: OUT (default build-gpu-check/), TESSERA_GPU_BUILD (default /tmp/tessera-gpu-build),
# TESSERA_CUDA_ARCHS (default: the GPU's compute capability, 9.0 -> 90a).
# TESSERA_BUNDLE: an unpacked bundle of the main build (tools/gpu/bundle.sh) whose tests/ holds
# device_ops_test, device_moe_ops_test and device_compressor_ops_test (every core/cuda kernel
# against the cpu backend),
# device_communicator_test (NCCL with one rank), device_graph_test (CUDA graphs),
# kvcache_bf16_device_test, kvcache_fp8_device_test and attention_conformance_device_test (the
# attention x kv matrix): they are run too.
# Exit status: 0 all passed, 1 a step failed, 77 no CUDA device (build checked, nothing run).
#
# `tools/gpu/check.sh --bundle-only BUNDLE_DIR`: no build and no GPU step; checks that a bundle made
# by tools/gpu/bundle.sh starts on its own (tools/gpu/bundle_check.sh).
set -uo pipefail
if [ "${1:-}" = "--bundle-only" ]; then
  exec "$(dirname "$0")/bundle_check.sh" "${2:?usage: check.sh --bundle-only BUNDLE_DIR}"
fi
here=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$here/build-gpu-check}
build=${TESSERA_GPU_BUILD:-/tmp/tessera-gpu-build}
mkdir -p "$out"
log=$out/check.log
: >"$log"
export PATH=$PATH:/usr/local/cuda/bin
t_start=$(date +%s)

steps=()   # "| step | result | seconds |" rows
failed=0
skipped=0
say() { echo "$*" | tee -a "$log"; }
# step NAME TIMEOUT COMMAND...: runs with a time limit, logs, records the result.
step() {
  local name=$1 limit=$2
  shift 2
  local t0 rc result
  t0=$(date +%s)
  say "==> $name: $*"
  timeout "$limit" "$@" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  case $rc in
    0) result=pass ;;
    77) result="skipped (no CUDA device)"; skipped=1 ;;
    124) result="FAIL (timed out after ${limit}s)"; failed=1 ;;
    *) result="FAIL (exit $rc)"; failed=1 ;;
  esac
  steps+=("| $name | $result | $(($(date +%s) - t0)) |")
  say "<== $name: $result"
  return 0
}

# ---- machine
gpu="none"
cc=""
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>/dev/null | head -1)
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' ')
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,temperature.gpu,power.draw \
    --format=csv >>"$log" 2>&1 || true
fi
if [ -n "${TESSERA_CUDA_ARCHS:-}" ]; then
  archs=$TESSERA_CUDA_ARCHS
elif [ "$cc" = "9.0" ]; then
  archs=90a
elif [ -n "$cc" ]; then
  archs=${cc/./}
else
  archs="90a;120"
fi
commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo "${TESSERA_COMMIT:-unknown}")
nvcc_version=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')
say "GPU: $gpu; building for sm $archs; commit $commit; nvcc ${nvcc_version:-?}; $(cmake --version | head -1)"

# ---- build
step "configure" 120 cmake -S "$here/tools/gpu" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_CUDA_ARCHITECTURES=$archs"
step "build" 300 cmake --build "$build" -j "$(nproc)"
plugin=$build/libtessera_attention_mma.so

# ---- tests
step "attention_mma_plan_test" 60 "$build/attention_mma_plan_test"
step "device_module_test" 60 "$build/device_module_test" "$build/libtessera_cuda.so"
step "attention_mma_test" 240 "$build/attention_mma_test" "$plugin" --markdown "$out/test_table.md"
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ -n "$sanitizer" ] && [ "$skipped" = 0 ]; then
  step "memcheck flash-decode-csa" 90 "$sanitizer" --tool memcheck --error-exitcode 3 \
    "$build/attention_mma_test" "$plugin" --quick --only flash-decode-csa
  step "racecheck csa-small" 90 "$sanitizer" --tool racecheck --error-exitcode 3 \
    "$build/attention_mma_test" "$plugin" --quick --only csa-small
fi

# The device paths of the cache plugins and the attention x kv conformance matrix: the plugins'
# CUDA modules need the main build's plugins, so they come from a bundle (tools/gpu/bundle.sh)
# unpacked at TESSERA_BUNDLE.
bundle_dir=${TESSERA_BUNDLE:-}
if [ -n "$bundle_dir" ] && [ -x "$bundle_dir/tests/kvcache_bf16_device_test" ]; then
  bundle_env=(env "LD_LIBRARY_PATH=$bundle_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  # Every kernel of the device module (core/cuda) against the cpu backend on the GPU: the
  # decode-shaped and tensor-core FP8 / FP4 products, grouped experts, routing, norms, rope.
  for test in device_ops_test device_moe_ops_test device_compressor_ops_test; do
    if [ -x "$bundle_dir/tests/$test" ]; then
      step "$test (GPU kernels vs cpu)" 120 "${bundle_env[@]}" TESSERA_REQUIRE_GPU=1 \
        "$bundle_dir/tests/$test" --gtest_filter='Backends/*/cuda:GpuBackend.*'
    fi
  done
  # CUDA graphs (Device::capture / launch): captured chains replay the eager bits with new
  # page-locked inputs; what a graph cannot hold breaks the capture with a message.
  if [ -x "$bundle_dir/tests/device_graph_test" ]; then
    step "device_graph_test (CUDA graphs)" 60 "${bundle_env[@]}" TESSERA_REQUIRE_GPU=1 \
      "$bundle_dir/tests/device_graph_test" --gtest_filter='DeviceGraphs.*'
  fi
  # The device collectives through NCCL, one rank: fp32 and bf16 all-reduce, all-gather.
  if [ -x "$bundle_dir/tests/device_communicator_test" ]; then
    step "device_communicator_test (NCCL, one rank)" 60 "${bundle_env[@]}" TESSERA_REQUIRE_GPU=1 \
      "$bundle_dir/tests/device_communicator_test" --gtest_filter='*/nccl'
  fi
  step "kvcache_bf16_device_test" 60 "${bundle_env[@]}" "$bundle_dir/tests/kvcache_bf16_device_test" \
    "$bundle_dir/plugins/libtessera_kvcache_bf16.so"
  step "kvcache_fp8_device_test" 60 "${bundle_env[@]}" "$bundle_dir/tests/kvcache_fp8_device_test" \
    "$bundle_dir/plugins/libtessera_kvcache_fp8.so"
  for attention in reference mma; do
    for kv in bf16 fp8; do
      step "conformance $attention x $kv" 120 "${bundle_env[@]}" \
        "$bundle_dir/tests/attention_conformance_device_test" \
        "$bundle_dir/plugins/libtessera_attention_$attention.so" \
        "$bundle_dir/plugins/libtessera_kvcache_$kv.so"
    done
  done
  # The engine on the GPU (tools/gpu/engine_steps.sh): the shipped model's greedy text per
  # attention x kv pair against the CPU engine, then `tessera bench device` on a Flash-shaped
  # checkpoint made here.
  step "engine: shipped model per pair, Flash-shaped benches" 420 \
    "$here/tools/gpu/engine_steps.sh" "$bundle_dir" "$out" cuda
else
  say "(no TESSERA_BUNDLE with device tests: the cache device paths, the matrix and the engine"
  say " steps are not run)"
fi

# ---- benchmark
step "attention_mma_bench" 240 "$build/attention_mma_bench" --markdown "$out/bench_table.md"
step "fp8_gemm_bench" 180 "$build/fp8_gemm_bench" --markdown "$out/fp8_gemm_table.md"

# ---- report
total=$(($(date +%s) - t_start))
{
  echo "# Tessera GPU check"
  echo
  echo "- command: \`tools/gpu/check.sh\` (commit $commit), $(date -u '+%Y-%m-%d %H:%M UTC'), ${total}s in all"
  echo "- GPU: $gpu (built for sm $archs, nvcc ${nvcc_version:-?})"
  echo
  echo "| step | result | seconds |"
  echo "|---|---|---|"
  printf '%s\n' "${steps[@]}"
  echo
  echo "## Correctness: attention_mma_test (mma plugin vs CPU reference)"
  echo
  if [ -s "$out/test_table.md" ]; then cat "$out/test_table.md"; else echo "(no results: see check.log)"; fi
  echo
  echo "## Kernel benchmark: attention_mma_bench"
  echo
  if [ -s "$out/bench_table.md" ]; then cat "$out/bench_table.md"; else echo "(no results: see check.log)"; fi
  echo
  echo "## FP8 GEMM against cuBLASLt: fp8_gemm_bench"
  echo
  if [ -s "$out/fp8_gemm_table.md" ]; then cat "$out/fp8_gemm_table.md"; else echo "(no results: see check.log)"; fi
  echo
  echo "## Decode on a Flash-shaped checkpoint: tessera bench device"
  echo
  if [ -s "$out/device_bench.md" ]; then cat "$out/device_bench.md"; else echo "(not run: needs TESSERA_BUNDLE; see check.log)"; fi
  echo
  echo "## The same decode steps with executor.cuda_graphs = false"
  echo
  if [ -s "$out/device_bench_eager.md" ]; then cat "$out/device_bench_eager.md"; else echo "(not run: see check.log)"; fi
  echo
  echo "## mma against reference on the Flash-shaped checkpoint: tessera bench attention"
  echo
  if [ -s "$out/attention_bench.md" ]; then cat "$out/attention_bench.md"; else echo "(not run: needs TESSERA_BUNDLE; see check.log)"; fi
} >"$out/gpu_results.md"
echo
cat "$out/gpu_results.md"
if [ "$failed" != 0 ]; then exit 1; fi
if [ "$skipped" != 0 ]; then exit 77; fi
exit 0
