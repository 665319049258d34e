#!/usr/bin/env python3
"""Train the byte-level BPE tokenizer of models/tiny-dsv4 with PyPI `tokenizers`.

The tokenizer.json mirrors the structure of DeepSeek-V3/V4's real one:
  pre_tokenizer = Sequence[ Split(\\p{N}{1,3}), Split(CJK run), Split(GPT-4-like regex),
                            ByteLevel(add_prefix_space=false, use_regex=false) ]
  decoder       = ByteLevel
  post_processor= ByteLevel (no automatic BOS), like DeepSeek's
  model         = BPE (byte fallback through the 256-symbol ByteLevel alphabet)
Special tokens carry DeepSeek-V4 spellings so encoding_dsv4.py prompts tokenize
unchanged; only the ids differ from the real 129280-entry vocabulary
(BOS=0 and EOS=1 match).
"""
import argparse
import json
import os

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

# Same three regexes as DeepSeek's tokenizer.json (V3 / V3.2 / V4 share them).
PAT_DIGITS = r"\p{N}{1,3}"
PAT_CJK = "[一-龥\u3040-ゟ゠-ヿ]+"
# Written exactly as the JSON string in DeepSeek's tokenizer.json (CR/LF as real characters).
PAT_MAIN = ('[!"#$%&\'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|'
            ' ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+')

# (content, special, normalized) in id order. BOS=0, EOS=1, PAD=2 as in DeepSeek-V4; the flags
# follow the real V4 tokenizer.json (as recorded in tools/fixtures/tokenizer/make_tokenizer_fixtures.py):
# BOS/EOS/PAD special, the named chat/tool/task tokens special=false (so decode(skip_special_tokens)
# keeps them) — all of them are still matched as whole tokens in input text.
# The real ids (128800+) are replaced by 3..27; this subset of the 47 named V4 tokens keeps every
# token that encoding_dsv4.py emits.
SPECIAL_TOKENS = [
    ("<｜begin▁of▁sentence｜>", True, False),
    ("<｜end▁of▁sentence｜>", True, False),
    ("<｜▁pad▁｜>", True, False),
    ("<｜User｜>", False, True),
    ("<｜Assistant｜>", False, True),
    ("<think>", False, True),
    ("</think>", False, True),
    ("｜DSML｜", False, True),
    ("<｜latest_reminder｜>", False, True),
    ("<｜action｜>", False, True),
    ("<｜query｜>", False, True),
    ("<｜authority｜>", False, True),
    ("<｜domain｜>", False, True),
    ("<｜title｜>", False, True),
    ("<｜read_url｜>", False, True),
    ("<｜fim▁hole｜>", False, True),
    ("<｜fim▁begin｜>", False, True),
    ("<｜fim▁end｜>", False, True),
    ("<|EOT|>", False, True),
    ("<｜tool▁calls▁begin｜>", False, True),
    ("<｜tool▁calls▁end｜>", False, True),
    ("<｜tool▁call▁begin｜>", False, True),
    ("<｜tool▁call▁end｜>", False, True),
    ("<｜tool▁outputs▁begin｜>", False, True),
    ("<｜tool▁outputs▁end｜>", False, True),
    ("<｜tool▁output▁begin｜>", False, True),
    ("<｜tool▁output▁end｜>", False, True),
    ("<｜tool▁sep｜>", False, True),
]


def text_iter(corpus, specials):
    with open(corpus) as f:
        for line in f:
            row = json.loads(line)
            if row["split"] != "train":
                continue
            t = row["text"]
            for s in specials:  # specials are added tokens; keep them out of BPE statistics
                t = t.replace(s, "\n")
            yield t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="/tmp/tiny_dsv4_data/corpus.jsonl")
    ap.add_argument("--vocab-size", type=int, default=4096)
    ap.add_argument("--out", default="models/tiny-dsv4")
    args = ap.parse_args()

    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PAT_DIGITS), behavior="isolated", invert=False),
        pre_tokenizers.Split(Regex(PAT_CJK), behavior="isolated", invert=False),
        pre_tokenizers.Split(Regex(PAT_MAIN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    specials = [s for s, _, _ in SPECIAL_TOKENS]
    trainer = trainers.BpeTrainer(
        vocab_size=args.vocab_size,
        min_frequency=2,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(text_iter(args.corpus, specials), trainer=trainer)
    # DeepSeek-V4's post_processor is a ByteLevel one (no automatic BOS; prompts carry BOS literally).
    tok.post_processor = processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True)

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "tokenizer.json")
    tok.save(path)
    j = json.load(open(path))
    flags = {c: (sp, nm) for c, sp, nm in SPECIAL_TOKENS}
    for at in j["added_tokens"]:
        at["special"], at["normalized"] = flags[at["content"]]
    with open(path, "w") as f:
        json.dump(j, f, ensure_ascii=False, indent=2)
    for i, (s, _, _) in enumerate(SPECIAL_TOKENS):
        assert Tokenizer.from_file(path).token_to_id(s) == i, s

    cfg = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": specials[0],
        "eos_token": specials[1],
        "pad_token": specials[2],
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "legacy": True,
        "model_max_length": 4096,
    }
    with open(os.path.join(args.out, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, ensure_ascii=False, indent=2)
    t = Tokenizer.from_file(path)
    demo = "<｜begin▁of▁sentence｜><｜User｜>What is 12345 + 7?<｜Assistant｜><think>Easy.</think>In the beginning God created the heaven and the earth.<｜end▁of▁sentence｜>"
    enc = t.encode(demo, add_special_tokens=False)
    print("vocab", t.get_vocab_size(), "demo tokens", len(enc.ids))
    print(enc.tokens)
    assert t.decode(enc.ids, skip_special_tokens=False) == demo, t.decode(enc.ids, skip_special_tokens=False)


if __name__ == "__main__":
    main()
