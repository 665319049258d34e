#!/usr/bin/env python3
"""Export a train.py checkpoint to models/tiny-dsv4 and evaluate it.

Writes into --out:
  model.safetensors       transformers tensor names; bf16 except the tensors DeepSeek ships in
                          fp32 (mHC fn/base/scale, attention sinks, compressor position_bias = ape,
                          e_score_correction_bias) and tid2eid (int64), as in the official checkpoint
  config.json             save_pretrained() output (modern keys) plus the legacy keys
                          compress_ratios / num_hash_layers / qk_rope_head_dim for readers of the
                          official config format
  generation_config.json  bos/eos, temperature 0.6, top_p 0.95
  loss_curve.png
and tools/train_tiny/results.json (held-out perplexity of the exported bf16 weights, samples).
The exported directory is re-loaded with from_pretrained() for the evaluation, so the shipped
files are what is measured.
"""
import argparse
import json
import math
import os
import time

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer
from transformers import DeepseekV4Config, DeepseekV4ForCausalLM, GenerationConfig

HERE = os.path.dirname(os.path.abspath(__file__))
FP32_KEYS = ("attn_hc.", "ffn_hc.", "hc_head.", ".sinks", "position_bias", "e_score_correction_bias")

BOS, EOS = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
USER, ASSISTANT, THINK, END_THINK = "<｜User｜>", "<｜Assistant｜>", "<think>", "</think>"

PLAIN_PROMPTS = [
    "In the beginning",
    "And the LORD said unto Moses,",
    "Blessed are the",
    "Apple (n.)",
    "A fool and his money",
    "The trouble with computers is",
]
CHAT_PROMPTS = [
    ("What does the word courage mean?", False),
    ("Quote a verse from Psalms 23.", False),
    ("Tell me a fortune.", False),
    ("What is 12 + 7?", False),
    ("Who are you?", False),
    ("What does the word lantern mean?", True),
    ("What is 20 - 6?", True),
]


def chat_prompt(q, think):
    return BOS + USER + q + ASSISTANT + (THINK if think else END_THINK)


def export(run_dir, out):
    cfg = DeepseekV4Config.from_pretrained(run_dir)
    sd = load_file(os.path.join(run_dir, "ckpt.safetensors"))
    model = DeepseekV4ForCausalLM(cfg)
    missing, unexpected = model.load_state_dict(sd, strict=True), None
    out_sd = {}
    for k, v in model.state_dict().items():
        if not v.is_floating_point():
            out_sd[k] = v.contiguous()
        elif any(s in k for s in FP32_KEYS):
            out_sd[k] = v.float().contiguous()
        else:
            out_sd[k] = v.to(torch.bfloat16).contiguous()
    os.makedirs(out, exist_ok=True)
    save_file(out_sd, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    cfg.dtype = torch.bfloat16
    cfg.architectures = ["DeepseekV4ForCausalLM"]
    cfg.save_pretrained(out)
    # legacy keys (official inference/config.json spelling) next to the modern ones; HF folds them
    # back into the same layer_types / mlp_layer_types / partial_rotary_factor on load.
    cpath = os.path.join(out, "config.json")
    j = json.load(open(cpath))
    ratio = {"sliding_attention": 0, "compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
    j["compress_ratios"] = [ratio[t] for t in cfg.layer_types]
    j["num_hash_layers"] = sum(t == "hash_moe" for t in cfg.mlp_layer_types)
    j["qk_rope_head_dim"] = cfg.qk_rope_head_dim
    j["model_type"] = "deepseek_v4"
    json.dump(j, open(cpath, "w"), indent=2, sort_keys=True)
    gen = GenerationConfig(bos_token_id=0, eos_token_id=1, pad_token_id=2, do_sample=True, temperature=0.6, top_p=0.95)
    gen.save_pretrained(out)
    n = sum(v.numel() for k, v in out_sd.items() if v.is_floating_point())
    size = os.path.getsize(os.path.join(out, "model.safetensors"))
    print(f"exported {n} float params, {size} bytes")
    return n, size


def held_out_streams(corpus, tok):
    held = {}
    with open(corpus) as f:
        for line in f:
            r = json.loads(line)
            if r["split"] == "heldout":
                held.setdefault(r["src"], []).extend(tok.encode(r["text"], add_special_tokens=False).ids)
    return {k: np.array(v, dtype=np.int64) for k, v in held.items()}


@torch.no_grad()
def perplexity(model, held, seq):
    res, tn, tl = {}, 0, 0.0
    for src, arr in sorted(held.items()):
        nll, n = 0.0, 0
        for c in range(len(arr) // seq):
            x = torch.from_numpy(arr[c * seq:(c + 1) * seq])[None]
            out = model(input_ids=x, labels=x, use_cache=False)
            nll += out.loss.item() * (seq - 1)
            n += seq - 1
        res[src] = {"ppl": round(math.exp(nll / n), 2), "tokens": n}
        tn += n
        tl += nll
    res["all"] = {"ppl": round(math.exp(tl / tn), 2), "tokens": tn, "loss": round(tl / tn, 4)}
    return res


@torch.no_grad()
def generate(model, tok, text, greedy, max_new, seed):
    ids = torch.tensor([tok.encode(text, add_special_tokens=False).ids])
    torch.manual_seed(seed)
    kw = dict(do_sample=False) if greedy else dict(do_sample=True, temperature=0.6, top_p=0.95)
    out = model.generate(ids, max_new_tokens=max_new, eos_token_id=1, pad_token_id=2, **kw)
    new = out[0, ids.shape[1]:].tolist()
    return tok.decode(new, skip_special_tokens=False)


def loss_curve(log, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tr = [r for r in log if "loss" in r]
    ev = [r for r in log if "eval_ppl" in r]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    ax.plot([r["tokens"] / 1e6 for r in tr], [r["loss"] for r in tr], lw=0.6, alpha=0.45, label="train loss (batch)")
    ax.plot([r["tokens"] / 1e6 for r in tr], [r["loss_ema"] for r in tr], lw=1.6, label="train loss (EMA 0.98)")
    if ev:
        tok_at = {r["step"]: r["tokens"] for r in tr}
        xs = [tok_at.get(r["step"], max((t for s, t in tok_at.items() if s <= r["step"]), default=0)) / 1e6 for r in ev]
        ax.plot(xs, [math.log(r["eval_ppl"]["all"]) for r in ev], "o-", label="held-out loss (quick, 4x512/source)")
    ax.set_xlabel("training tokens (millions)")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title("tiny-dsv4 (DeepseekV4ForCausalLM, 9.2M params) on 1 CPU core")
    ax.set_ylim(bottom=max(0.0, min(r["loss"] for r in tr) - 0.3), top=min(9.0, max(r["loss"] for r in tr) + 0.2))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run-dir", default="/tmp/tiny_dsv4_run")
    ap.add_argument("--out", default=os.path.join(HERE, "../../models/tiny-dsv4"))
    ap.add_argument("--corpus", default="/tmp/tiny_dsv4_data/corpus.jsonl")
    ap.add_argument("--results", default=os.path.join(HERE, "results.json"))
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--max-new", type=int, default=80)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--skip-eval", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    out = os.path.abspath(args.out)
    n, size = export(args.run_dir, out)
    meta = json.load(open(os.path.join(args.run_dir, "log.json")))
    loss_curve(meta["log"], os.path.join(out, "loss_curve.png"))
    res = {"float_params": n, "safetensors_bytes": size, "train_steps": meta.get("steps"),
           "train_tokens": meta.get("tokens"), "train_seconds": meta.get("train_seconds"),
           "train_args": meta["args"], "final_eval_ppl_fp32_weights": meta.get("final_eval_ppl_fp32")}
    if not args.skip_eval:
        tok = Tokenizer.from_file(os.path.join(out, "tokenizer.json"))
        model = DeepseekV4ForCausalLM.from_pretrained(out, dtype=torch.float32)  # bf16 file, fp32 compute
        model.eval()
        t = time.time()
        res["heldout_bf16_weights"] = perplexity(model, held_out_streams(args.corpus, tok), args.seq)
        print(json.dumps(res["heldout_bf16_weights"]), f"({time.time() - t:.0f}s)", flush=True)
        samples = []
        for i, p in enumerate(PLAIN_PROMPTS):
            for greedy in (False, True):
                s = generate(model, tok, BOS + p, greedy, args.max_new, seed=i)
                samples.append({"prompt": p, "mode": "greedy" if greedy else "t0.6_p0.95", "output": s})
                print(json.dumps(samples[-1], ensure_ascii=False), flush=True)
        for i, (q, think) in enumerate(CHAT_PROMPTS):
            for greedy in (False, True):
                s = generate(model, tok, chat_prompt(q, think), greedy, args.max_new, seed=100 + i)
                samples.append({"prompt": chat_prompt(q, think), "mode": "greedy" if greedy else "t0.6_p0.95",
                                "output": s})
                print(json.dumps(samples[-1], ensure_ascii=False), flush=True)
        res["samples"] = samples
    json.dump(res, open(args.results, "w"), indent=1, ensure_ascii=False)
    print("wrote", args.results)


if __name__ == "__main__":
    main()
