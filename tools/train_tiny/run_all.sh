#!/usr/bin/env bash
# Rebuild models/tiny-dsv4 from scratch on one CPU core (about 85 minutes).
# Needs the Debian packages bible-kjv, fortunes, fortunes-min, dict-gcide and a venv with
# torch (CPU), transformers>=5.7 (DeepseekV4ForCausalLM), tokenizers, safetensors, numpy, matplotlib.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-/opt/tessera-py/venv/bin/python}
DATA=${DATA:-/tmp/tiny_dsv4_data}
RUN=${RUN:-/tmp/tiny_dsv4_run}
MINUTES=${MINUTES:-78}
mkdir -p "$RUN"
$PY tools/train_tiny/prepare_data.py --out "$DATA"
$PY tools/train_tiny/train_tokenizer.py --corpus "$DATA/corpus.jsonl" --out models/tiny-dsv4
$PY tools/train_tiny/train.py --corpus "$DATA/corpus.jsonl" --run-dir "$RUN" --minutes "$MINUTES" 2>&1 | tee "$RUN/train.log"
$PY tools/train_tiny/export.py --run-dir "$RUN" --corpus "$DATA/corpus.jsonl" --out models/tiny-dsv4
