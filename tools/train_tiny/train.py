#!/usr/bin/env python3
"""Train the tiny DeepSeek-V4 model (models/tiny-dsv4) on one CPU core.

Uses transformers' DeepseekV4ForCausalLM unchanged. Training is bounded by wall
time: the learning-rate schedule (linear warm-up, cosine decay to 10%) is a
function of elapsed time / --minutes, so the run ends on time whatever the step
rate is. Checkpoints (fp32 safetensors + optimizer) are written every
--ckpt-minutes to --run-dir, so a partial result always exists.

Extras the HF module does not do by itself:
  * hash-MoE layers: `tid2eid` (token -> expert table) is a zero buffer in HF;
    here it is filled with a fixed random table (distinct experts per token).
  * learned-MoE layers: DeepSeek's auxiliary-loss-free balancing — after each
    step e_score_correction_bias += gamma * sign(mean_load - load).
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer
from transformers import DeepseekV4Config, DeepseekV4ForCausalLM
from transformers.models.deepseek_v4.modeling_deepseek_v4 import DeepseekV4HashRouter, DeepseekV4TopKRouter

HERE = os.path.dirname(os.path.abspath(__file__))


def model_config(vocab_size):
    # Every DeepSeek-V4 layer kind: layer 0 window-only (ratio 0), CSA (ratio 4 +
    # lightning indexer) and HCA (ratio 128); layers 0-1 hash-routed MoE, 2-5 learned MoE.
    return DeepseekV4Config(
        vocab_size=vocab_size,
        hidden_size=256,
        num_hidden_layers=6,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=64,
        qk_rope_head_dim=16,
        q_lora_rank=128,
        o_groups=2,
        o_lora_rank=128,
        sliding_window=128,
        compress_ratios=[0, 4, 128, 4, 128, 4],
        compress_rope_theta=160000.0,
        rope_theta=10000.0,
        rope_scaling={"type": "yarn", "factor": 16, "original_max_position_embeddings": 65536,
                      "beta_fast": 32, "beta_slow": 1},
        max_position_embeddings=1048576,
        index_n_heads=4,
        index_head_dim=32,
        index_topk=16,
        n_routed_experts=8,
        n_shared_experts=1,
        num_experts_per_tok=2,
        moe_intermediate_size=128,
        num_hash_layers=2,
        scoring_func="sqrtsoftplus",
        norm_topk_prob=True,
        routed_scaling_factor=1.5,
        swiglu_limit=10.0,
        hc_mult=4,
        hc_sinkhorn_iters=20,
        hc_eps=1e-6,
        rms_norm_eps=1e-6,
        hidden_act="silu",
        num_nextn_predict_layers=0,
        tie_word_embeddings=False,
        bos_token_id=0,
        eos_token_id=1,
        pad_token_id=2,
        initializer_range=0.02,
    )


def load_streams(corpus, tok):
    train, held = [], {}
    with open(corpus) as f:
        rows = [json.loads(l) for l in f]
    texts = [r["text"] for r in rows]
    encs = tok.encode_batch(texts, add_special_tokens=False)
    for r, e in zip(rows, encs):
        if r["split"] == "train":
            train.extend(e.ids)
        else:
            held.setdefault(r["src"], []).extend(e.ids)
    return np.array(train, dtype=np.int32), {k: np.array(v, dtype=np.int32) for k, v in held.items()}


def init_hash_tables(model, seed):
    g = torch.Generator().manual_seed(seed)
    for name, m in model.named_modules():
        if isinstance(m, DeepseekV4HashRouter):
            v, k = m.tid2eid.shape
            perm = torch.argsort(torch.rand(v, m.num_experts, generator=g), dim=-1)[:, :k]
            m.tid2eid.copy_(perm.long())


@torch.no_grad()
def evaluate(model, held, seq, max_chunks=None):
    model.eval()
    res, tot_nll, tot_n = {}, 0.0, 0
    for src, arr in sorted(held.items()):
        n_chunks = len(arr) // seq
        if max_chunks:
            n_chunks = min(n_chunks, max_chunks)
        nll, n = 0.0, 0
        for c in range(n_chunks):
            x = torch.from_numpy(arr[c * seq:(c + 1) * seq].astype(np.int64))[None]
            out = model(input_ids=x, labels=x, use_cache=False)
            nll += out.loss.item() * (seq - 1)
            n += seq - 1
        res[src] = math.exp(nll / max(n, 1))
        tot_nll += nll
        tot_n += n
    res["all"] = math.exp(tot_nll / max(tot_n, 1))
    model.train()
    return res


def save_ckpt(model, opt, step, run_dir, meta):
    sd = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    tmp = os.path.join(run_dir, "ckpt.tmp.safetensors")
    save_file(sd, tmp, metadata={"step": str(step)})
    os.replace(tmp, os.path.join(run_dir, "ckpt.safetensors"))
    torch.save({"opt": opt.state_dict(), "step": step, "meta": meta}, os.path.join(run_dir, "opt.tmp.pt"))
    os.replace(os.path.join(run_dir, "opt.tmp.pt"), os.path.join(run_dir, "opt.pt"))
    model.config.save_pretrained(run_dir)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="/tmp/tiny_dsv4_data/corpus.jsonl")
    ap.add_argument("--tokenizer", default=os.path.join(HERE, "../../models/tiny-dsv4/tokenizer.json"))
    ap.add_argument("--run-dir", default="/tmp/tiny_dsv4_run")
    ap.add_argument("--minutes", type=float, default=75.0, help="wall-time budget for the training loop")
    ap.add_argument("--ckpt-minutes", type=float, default=8.0)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.1)
    ap.add_argument("--warmup-frac", type=float, default=0.03)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--bias-gamma", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-steps", type=int, default=0, help="0 = until the time budget is used")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    os.makedirs(args.run_dir, exist_ok=True)
    tok = Tokenizer.from_file(args.tokenizer)
    t0 = time.time()
    train, held = load_streams(args.corpus, tok)
    print(f"tokens: train {len(train)}, heldout " + ", ".join(f"{k} {len(v)}" for k, v in held.items()),
          f"({time.time() - t0:.1f}s)", flush=True)

    cfg = model_config(tok.get_vocab_size())
    model = DeepseekV4ForCausalLM(cfg)
    init_hash_tables(model, args.seed + 17)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"params {n_params} ({n_params / 1e6:.2f}M); layer_types {cfg.layer_types}; mlp {cfg.mlp_layer_types}", flush=True)

    # Aux-loss-free balancing: record selected experts of learned routers.
    loads = {}

    def hook(mod, inp, out):
        loads[mod] = torch.bincount(out[2].reshape(-1), minlength=mod.num_experts).float()

    routers = [m for m in model.modules() if isinstance(m, DeepseekV4TopKRouter)]
    for r in routers:
        r.register_forward_hook(hook)

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "embed" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    rng = np.random.default_rng(args.seed)
    budget = args.minutes * 60.0
    meta = {"args": vars(args), "n_params": n_params, "log": []}
    start = time.time()
    last_ckpt = start
    step, tokens, ema = 0, 0, None
    while True:
        el = time.time() - start
        frac = el / budget
        if frac >= 1.0 or (args.max_steps and step >= args.max_steps):
            break
        if frac < args.warmup_frac:
            lr = args.lr * max(frac / args.warmup_frac, 0.02)
        else:
            p = (frac - args.warmup_frac) / (1 - args.warmup_frac)
            lr = args.lr * (args.min_lr_frac + (1 - args.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * p)))
        for g in opt.param_groups:
            g["lr"] = lr
        offs = rng.integers(0, len(train) - args.seq - 1, size=args.batch)
        x = torch.from_numpy(np.stack([train[o:o + args.seq] for o in offs]).astype(np.int64))
        ts = time.time()
        out = model(input_ids=x, labels=x, use_cache=False)
        loss = out.loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
        opt.step()
        with torch.no_grad():
            for r in routers:
                ld = loads.get(r)
                if ld is not None:
                    r.e_score_correction_bias += args.bias_gamma * torch.sign(ld.mean() - ld)
        step += 1
        tokens += x.numel()
        li = loss.item()
        ema = li if ema is None else 0.98 * ema + 0.02 * li
        dt = time.time() - ts
        if step % 10 == 0 or step <= 5:
            rec = {"step": step, "time_s": round(time.time() - start, 1), "loss": round(li, 4), "loss_ema": round(ema, 4),
                   "lr": lr, "gnorm": round(gn, 3), "tok_s": round(x.numel() / dt, 1), "tokens": tokens}
            meta["log"].append(rec)
            print(json.dumps(rec), flush=True)
        if time.time() - last_ckpt > args.ckpt_minutes * 60:
            ev = evaluate(model, held, args.seq, max_chunks=4)
            meta["log"].append({"step": step, "time_s": round(time.time() - start, 1), "eval_ppl": ev})
            print(json.dumps({"step": step, "eval_ppl_quick": ev}), flush=True)
            save_ckpt(model, opt, step, args.run_dir, meta)
            json.dump(meta, open(os.path.join(args.run_dir, "log.json"), "w"), indent=1)
            last_ckpt = time.time()
    train_s = time.time() - start
    meta["train_seconds"] = train_s
    meta["steps"] = step
    meta["tokens"] = tokens
    print(f"done: {step} steps, {tokens} tokens, {train_s / 60:.1f} min", flush=True)
    save_ckpt(model, opt, step, args.run_dir, meta)
    ev = evaluate(model, held, args.seq)
    meta["final_eval_ppl_fp32"] = ev
    print(json.dumps({"final_eval_ppl_fp32": ev}), flush=True)
    json.dump(meta, open(os.path.join(args.run_dir, "log.json"), "w"), indent=1)
    print("finished", flush=True)


if __name__ == "__main__":
    main()
