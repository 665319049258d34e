#!/usr/bin/env bash
# tools/gpu/engine_steps.sh BUNDLE_DIR OUT_DIR DEVICE: the engine-level steps of the device check,
# run with a bundle's `tessera` (tools/gpu/bundle.sh) and the checkout's models/:
#   1. the shipped model (models/tiny-dsv4), greedy, through `tessera generate` on DEVICE with
#      each attention x kv pair: the text must equal the CPU engine's with the same cache;
#   2. a DeepSeek-V4-Flash-shaped checkpoint (`tessera make-checkpoint --preset flash`, all 256
#      experts, TESSERA_FLASH_LAYERS layers, default 2) and `tessera bench device` on it at
#      batch TESSERA_BENCH_BATCH (default 1,8,64), context TESSERA_BENCH_CONTEXT (default 256),
#      and prefills of TESSERA_BENCH_PREFILL tokens (default 1024,8192), the tables in
#      OUT_DIR/device_bench.md (and OUT_DIR/device_bench_eager.md: cuda_graphs = false);
#   3. `tessera bench attention` on that checkpoint: reference vs mma at contexts
#      TESSERA_ATTENTION_CONTEXT (default 4096,16384,65536), batch 1, in OUT_DIR/attention_bench.md
#      (on a GPU only: the CPU engine has no per-block timing).
# DEVICE: "cuda" (a GPU: tools/gpu/check.sh) or "cpu" (bundle_check.sh: the same steps with the
# CPU engine on both sides and a reduced checkpoint, to prove the bundle runs them).
# Exit 0 when every step passes, 1 otherwise; each step's line on stdout.
set -uo pipefail
bundle=$(cd "${1:?usage: engine_steps.sh BUNDLE_DIR OUT_DIR cuda|cpu}" && pwd)
out=${2:?usage: engine_steps.sh BUNDLE_DIR OUT_DIR cuda|cpu}
device=${3:?usage: engine_steps.sh BUNDLE_DIR OUT_DIR cuda|cpu}
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tessera=(env LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bundle/tessera")
failed=0

# config FILE MODEL DEVICE ATTENTION KV MEMORY_GIB
config() {
  {
    echo "[model]"
    echo "path = \"$2\""
    echo "max_context = 4096"
    echo "[executor]"
    echo "device = \"$3\""
    echo "threads = 0"
    echo "[kv_cache]"
    echo "plugin = \"$5\""
    echo "memory_gib = $6"
    echo "[attention]"
    echo "plugin = \"$4\""
    echo "[sampler]"
    echo "plugin = \"standard\""
    echo "[plugins]"
    echo "search_path = [\"$bundle/plugins\"]"
  } >"$1"
}

# 1. the shipped model's greedy text per pair against the CPU engine's
shipped=$here/models/tiny-dsv4
for kv in bf16 fp8; do
  config "$work/cpu-$kv.toml" "$shipped" cpu reference "$kv" 0.05
  want=$("${tessera[@]}" generate -c "$work/cpu-$kv.toml" -p "The capital of France is" \
    --max-tokens 16 --temperature 0 2>"$work/cpu-$kv.log") || { echo "FAIL cpu $kv generate"; failed=1; }
  attentions="reference mma"
  [ "$device" = cpu ] && attentions=reference
  for attention in $attentions; do
    config "$work/$attention-$kv.toml" "$shipped" "$device" "$attention" "$kv" 0.05
    got=$("${tessera[@]}" generate -c "$work/$attention-$kv.toml" -p "The capital of France is" \
      --max-tokens 16 --temperature 0 2>"$work/$attention-$kv.log")
    if [ $? = 0 ] && [ "$got" = "$want" ] && [ -n "$want" ]; then
      echo "pass: shipped model, $attention x $kv on $device: the CPU engine's 16 greedy tokens"
    else
      echo "FAIL: shipped model, $attention x $kv on $device: '$got', CPU: '$want'"
      tail -5 "$work/$attention-$kv.log"
      failed=1
    fi
  done
done

# 2. a Flash-shaped checkpoint and the decode benchmark on it
layers=${TESSERA_FLASH_LAYERS:-2}
batches=${TESSERA_BENCH_BATCH:-1,8,64}
context=${TESSERA_BENCH_CONTEXT:-256}
prefill=${TESSERA_BENCH_PREFILL:-1024,8192}
experts=0 vocab=129280
if [ "$device" = cpu ]; then  # what proves the bundle runs it, in seconds, on a small machine
  layers=1 experts=8 vocab=1024 batches=1,2 context=8 prefill=16
fi
if "${tessera[@]}" make-checkpoint --preset flash --layers "$layers" --experts "$experts" \
  --vocab "$vocab" --out "$work/flash" >"$work/make.log" 2>&1; then
  echo "pass: Flash-shaped checkpoint, $layers layer(s), experts ${experts/#0/256}"
  attention=mma
  [ "$device" = cpu ] && attention=reference
  config "$work/flash.toml" "$work/flash" "$device" "$attention" fp8 2
  sed -i 's/^max_context = .*/max_context = 16384/' "$work/flash.toml"
  if "${tessera[@]}" bench device -c "$work/flash.toml" --batch "$batches" --context "$context" \
    --steps 4 --prefill "$prefill" >"$out/device_bench.md" 2>"$work/bench.log"; then
    echo "pass: tessera bench device (batch $batches, context $context, prefill $prefill):" \
      "$out/device_bench.md"
  else
    echo "FAIL: tessera bench device"
    tail -5 "$work/bench.log"
    failed=1
  fi
  if [ "$device" = cuda ]; then
    # The same decode steps with CUDA graphs off: what the piecewise graphs save.
    sed 's/^\[executor\]$/[executor]\ncuda_graphs = false/' "$work/flash.toml" >"$work/flash-eager.toml"
    if "${tessera[@]}" bench device -c "$work/flash-eager.toml" --batch "$batches" \
      --context "$context" --steps 4 >"$out/device_bench_eager.md" 2>"$work/bench-eager.log"; then
      echo "pass: tessera bench device, cuda_graphs = false: $out/device_bench_eager.md"
    else
      echo "FAIL: tessera bench device, cuda_graphs = false"
      tail -5 "$work/bench-eager.log"
      failed=1
    fi
  fi
  if [ "$device" = cuda ]; then
    contexts=${TESSERA_ATTENTION_CONTEXT:-4096,16384,65536}
    config "$work/flash-long.toml" "$work/flash" cuda reference fp8 8
    sed -i 's/^max_context = .*/max_context = 70000/' "$work/flash-long.toml"
    if "${tessera[@]}" bench attention -c "$work/flash-long.toml" --context "$contexts" \
      --batch 1 --steps 4 >"$out/attention_bench.md" 2>"$work/attention.log"; then
      echo "pass: tessera bench attention (contexts $contexts): $out/attention_bench.md"
    else
      echo "FAIL: tessera bench attention"
      tail -5 "$work/attention.log"
      failed=1
    fi
  fi
else
  echo "FAIL: make-checkpoint"
  tail -5 "$work/make.log"
  failed=1
fi
exit "$failed"
