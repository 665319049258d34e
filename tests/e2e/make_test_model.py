#!/usr/bin/env python3
"""Builds the checkpoint the end-to-end tests serve: the tiny-a parity checkpoint
(tests/data/parity/tiny-a, 4 layers, hidden 64) with its vocabulary grown to a real tokenizer's
(models/tiny-dsv4/tokenizer.json by default), so text in and text out work. The new rows of the
embedding, the head and the hash-routing table (tid2eid) are random (seeded); the model writes
gibberish, which is all a serving test needs. Pure numpy; the safetensors format is written here.

usage: make_test_model.py OUT_DIR [--tokenizer PATH] [--seed N]
"""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SOURCE = os.path.join(REPO, "tests", "data", "parity", "tiny-a")

DTYPES = {"F32": np.float32, "I64": np.int64, "I32": np.int32, "BF16": None}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(info["shape"]).copy()
    return tensors


def write_safetensors(path, tensors):
    names = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64", np.dtype(np.int32): "I32"}
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        t = np.ascontiguousarray(tensors[name])
        raw = t.tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)  # keep the data 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def tokenizer_vocab_size(path):
    with open(path, encoding="utf-8") as f:
        t = json.load(f)
    ids = list(t["model"]["vocab"].values()) + [a["id"] for a in t.get("added_tokens", [])]
    return max(ids) + 1


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("out_dir")
    p.add_argument("--tokenizer", default=os.path.join(REPO, "models", "tiny-dsv4", "tokenizer.json"))
    p.add_argument("--seed", type=int, default=1234)
    args = p.parse_args()

    rng = np.random.default_rng(args.seed)
    with open(os.path.join(SOURCE, "config.json")) as f:
        config = json.load(f)
    old_vocab = config["vocab_size"]
    vocab = tokenizer_vocab_size(args.tokenizer)
    if vocab < old_vocab:
        sys.exit(f"tokenizer has {vocab} ids, fewer than the checkpoint's {old_vocab}")
    tensors = read_safetensors(os.path.join(SOURCE, "model.safetensors"))
    n_experts = config["n_routed_experts"]
    for name, t in tensors.items():
        if t.ndim == 0 or t.shape[0] != old_vocab:
            continue
        extra = vocab - old_vocab
        if name.endswith("tid2eid"):
            # Each row names distinct experts, as the loader requires.
            rows = np.stack([rng.permutation(n_experts)[: t.shape[1]] for _ in range(extra)])
            tensors[name] = np.concatenate([t, rows.astype(t.dtype)])
        elif t.dtype == np.float32:
            rows = rng.normal(0.0, float(t.std()) or 0.02, size=(extra,) + t.shape[1:])
            tensors[name] = np.concatenate([t, rows.astype(np.float32)])
        else:
            sys.exit(f"do not know how to grow {name} ({t.dtype})")
    config["vocab_size"] = vocab

    os.makedirs(args.out_dir, exist_ok=True)
    write_safetensors(os.path.join(args.out_dir, "model.safetensors"), tensors)
    with open(os.path.join(args.out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    shutil.copyfile(args.tokenizer, os.path.join(args.out_dir, "tokenizer.json"))
    tok_config = os.path.join(os.path.dirname(args.tokenizer), "tokenizer_config.json")
    if os.path.exists(tok_config):
        shutil.copyfile(tok_config, os.path.join(args.out_dir, "tokenizer_config.json"))
    print(f"{args.out_dir}: tiny-a with vocab {old_vocab} -> {vocab}")


if __name__ == "__main__":
    main()
