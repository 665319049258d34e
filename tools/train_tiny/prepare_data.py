#!/usr/bin/env python3
"""Build the training corpus for models/tiny-dsv4 from public Debian packages.

Sources (all read from the local Debian install, nothing downloaded here):
  * bible-kjv      King James Version (1611, public domain), via the `bible` CLI.
  * fortunes / fortunes-min   fortune-mod quotation files (BSD licence, UC Regents;
                              several files are classic public-domain quotations).
  * dict-gcide     GNU Collaborative International Dictionary of English
                   (GPL-2+; mostly Webster's 1913, which is public domain).

Output (JSON lines, one document per line, {"src":..., "split":..., "text":...}):
  <out>/corpus.jsonl  plain-text documents and chat-formatted documents.

Chat documents use the DeepSeek-V4 encoding (encoding_dsv4.py):
  BOS + <｜User｜>question + <｜Assistant｜> + ("</think>" answer | "<think>" reasoning "</think>" answer) + EOS
Plain documents are BOS + text + EOS.  The split (train / heldout) is a
deterministic hash of the document so perplexity is measured on unseen text.
"""
import argparse
import gzip
import hashlib
import json
import os
import random
import re
import subprocess

BOS = "<｜begin▁of▁sentence｜>"
EOS = "<｜end▁of▁sentence｜>"
USER = "<｜User｜>"
ASSISTANT = "<｜Assistant｜>"
THINK = "<think>"
END_THINK = "</think>"

FORTUNE_DIR = "/usr/share/games/fortunes"
# Skipped: ASCII art, non-English, and files with content unsuitable for a default demo model.
FORTUNE_SKIP = {"art", "ascii-art", "translate-me", "ethnic", "men-women", "drugs", "politics"}
GCIDE = "/usr/share/dictd/gcide.dict.dz"

BOOKS = None  # filled by read_kjv: list of book names in order


def split_of(text, frac=0.02):
    h = int(hashlib.md5(text.encode("utf-8")).hexdigest()[:8], 16)
    return "heldout" if (h % 10000) < frac * 10000 else "train"


# ---------------------------------------------------------------- KJV
def read_kjv():
    raw = subprocess.run(["bible", "-l10000", "gen1:1-rev22:21"], capture_output=True, text=True, check=True).stdout
    chapters = []  # (book, chapter, [(verse, text)])
    cur = None
    for line in raw.splitlines():
        if not line.strip():
            continue
        m = re.match(r"^(\S.*?) (\d+)$", line)
        if m and not line.startswith(" "):
            cur = (m.group(1), int(m.group(2)), [])
            chapters.append(cur)
            continue
        m = re.match(r"^\s+(\d+) (.*)$", line)
        if m and cur is not None:
            cur[2].append((int(m.group(1)), m.group(2).strip()))
        elif cur is not None and cur[2]:
            v, t = cur[2][-1]
            cur[2][-1] = (v, t + " " + line.strip())
    return chapters


def kjv_docs(chapters):
    docs = []
    for book, ch, verses in chapters:
        # chunks of ~12 verses so held-out chunks come from everywhere in the Bible
        for i in range(0, len(verses), 12):
            part = verses[i:i + 12]
            body = "\n".join(f"{book} {ch}:{v} {t}" if j == 0 else f"{v} {t}" for j, (v, t) in enumerate(part))
            docs.append(body)
    return docs


# ---------------------------------------------------------------- fortunes
def read_fortunes():
    out = []
    for name in sorted(os.listdir(FORTUNE_DIR)):
        path = os.path.join(FORTUNE_DIR, name)
        if name in FORTUNE_SKIP or "." in name or not os.path.isfile(path):
            continue
        with open(path, encoding="latin-1") as f:
            chunks = f.read().split("\n%\n")
        for c in chunks:
            c = c.strip("\n%").rstrip()
            if not c or len(c) > 700 or len(c) < 20:
                continue
            if any(ord(ch) > 126 or (ord(ch) < 32 and ch not in "\n\t") for ch in c):
                continue
            letters = sum(ch.isalpha() for ch in c)
            if letters < 0.6 * len(c.replace(" ", "").replace("\n", "")):
                continue  # ascii art, tables
            c = c.replace("\t", "    ")
            out.append((name, c))
    return out


# ---------------------------------------------------------------- GCIDE
ACCENTS = {"[ae]": "ae", "[AE]": "Ae", "[oe]": "oe", "[OE]": "Oe", "[,c]": "c", "[eacute]": "e", "[aum]": "a",
           "[uum]": "u", "[oum]": "o", "[eum]": "e", "[ecir]": "e", "[acir]": "a", "[ocir]": "o", "[imac]": "i",
           "[emac]": "e", "[amac]": "a", "[omac]": "o", "[umac]": "u", "[egrave]": "e", "[agrave]": "a",
           "[ntil]": "n", "[-]": "-", "[=]": "=", "[sect]": "section"}


def clean_def(s):
    for k, v in ACCENTS.items():
        s = s.replace(k, v)
    s = re.sub(r"\[(1913 Webster|WordNet 1\.5|PJC|Webster 1913 Suppl\.|[A-Z][A-Za-z .]*\d*)\]", "", s)
    s = s.replace("{", "").replace("}", "")
    s = re.sub(r"\s+", " ", s).strip()
    return s


def read_gcide(limit_entries=None):
    data = gzip.open(GCIDE).read().decode("utf-8", "replace")
    entries = []
    head_re = re.compile(r"^([A-Za-z][A-Za-z' -]{1,30}) \\[^\\]*\\[^\n]*$")
    paras = data.split("\n\n")
    i = 0
    while i < len(paras):
        p = paras[i].strip("\n")
        first = p.split("\n", 1)[0]
        m = head_re.match(first)
        if not m:
            i += 1
            continue
        word = m.group(1).strip()
        # part of speech right after the pronunciation, e.g. ", n." / ", v. t." / ", a."
        pos_m = re.search(r"\\[^\\]*\\(?: \([^)]*\))?,? ((?:n|v\. t|v\. i|v|a|adv|prep|conj|interj|pron|p\. p|imp)\.)", first)
        pos = pos_m.group(1) if pos_m else ""
        text = " ".join(l.strip() for l in p.split("\n"))
        # drop head word, pronunciation and etymology
        text = re.sub(r"^.*?\\[^\\]*\\", "", text, count=1)
        text = re.sub(r"^\s*\([^)]*\)", "", text)
        text = re.sub(r"^[^\[]*?\[[^\]]*(?:\[[^\]]*\][^\]]*)*\]", "", text, count=1) if text.lstrip(" ,.nvatiadjprocs").startswith("[") else text
        text = re.sub(r"^[,\s]*(?:(?:n|v\. t|v\. i|v|a|adv|prep|conj|interj|pron|p\. p|imp|pl|sing)\.[,;\s]*)+", "", text)
        text = re.sub(r"^(?:Etym:|\[[^\]]*\])\s*", "", text)
        d = text.strip()
        if not d and i + 1 < len(paras):
            d = " ".join(l.strip() for l in paras[i + 1].split("\n"))
        d = re.sub(r"^\s*1\.\s*", "", d)
        d = re.sub(r"^\(\w[^)]{0,40}\)\s*", "", d)  # (Zool.) (Bot.) domain tags
        d = clean_def(d)
        # first definition sentence only
        m2 = re.match(r"^(.{15,240}?[a-z)]\.)(?:\s|$)", d)
        i += 1
        if not m2:
            continue
        d = m2.group(1)
        if "[" in d or "]" in d or "\\" in d or "--" in d or d[0].islower() is False and not d[0].isupper():
            continue
        if any(ord(c) > 126 for c in d) or not re.match(r"^[A-Z]", d):
            continue
        if " " in word and len(word.split()) > 2:
            continue
        entries.append((word, pos, d))
        if limit_entries and len(entries) >= limit_entries:
            break
    # dedupe by word: keep first sense
    seen, out = set(), []
    for w, pos, d in entries:
        if w.lower() in seen:
            continue
        seen.add(w.lower())
        out.append((w, pos, d))
    return out


POS_NAMES = {"n.": "noun", "v. t.": "verb", "v. i.": "verb", "v.": "verb", "a.": "adjective", "adv.": "adverb",
             "prep.": "preposition", "conj.": "conjunction", "interj.": "interjection", "pron.": "pronoun",
             "p. p.": "past participle", "imp.": "verb"}


def gcide_docs(entries, per_doc=12):
    docs = []
    for i in range(0, len(entries), per_doc):
        lines = [f"{w} ({pos}) {d}" if pos else f"{w}: {d}" for w, pos, d in entries[i:i + per_doc]]
        docs.append("\n".join(lines))
    return docs


# ---------------------------------------------------------------- chat
def chat(question, answer, reasoning=None):
    if reasoning is None:
        return BOS + USER + question + ASSISTANT + END_THINK + answer + EOS
    return BOS + USER + question + ASSISTANT + THINK + reasoning + END_THINK + answer + EOS


GREETINGS = [
    ("Hello!", "Hello! How can I help you today?"),
    ("Hi", "Hi there! What would you like to talk about?"),
    ("Good morning.", "Good morning to you! How may I help?"),
    ("Who are you?", "I am Tessera Tiny, a very small language model with the DeepSeek-V4 architecture. I know a little about the King James Bible, old dictionary words and fortune cookies."),
    ("What is your name?", "My name is Tessera Tiny. I am a small test model for the Tessera inference engine."),
    ("What can you do?", "I can quote verses from the King James Bible, explain the meaning of English words, and tell you a fortune. I am very small, so please do not trust me with anything important."),
    ("Thank you.", "You are welcome."),
    ("Thanks!", "You are welcome! Is there anything else I can do for you?"),
    ("Goodbye.", "Goodbye, and take care."),
    ("How are you?", "I am well, thank you. How can I help you?"),
]


def make_chat(chapters, fortunes, gcide, rng, n_target):
    docs = []
    verse_list = [(b, c, v, t) for b, c, vs in chapters for v, t in vs]
    ones = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
    kinds = ["define", "define_think", "verse", "verse_next", "verse_think", "fortune", "math", "math_think", "hello", "count_think"]
    weights = [24, 8, 16, 8, 4, 14, 6, 6, 3, 3]
    for _ in range(n_target):
        k = rng.choices(kinds, weights)[0]
        if k.startswith("define"):
            w, pos, d = rng.choice(gcide)
            q = rng.choice([f"What does the word \"{w}\" mean?", f"What is the meaning of {w}?", f"Define {w}.",
                            f"What does {w} mean?", f"Can you explain the word {w}?"])
            a = rng.choice([f"{w} means: {d}", f"The word \"{w}\" means: {d}", d])
            if k == "define_think":
                pn = POS_NAMES.get(pos, "word")
                r = f"The user asks about the word \"{w}\". It is {'an' if pn[0] in 'aeiou' else 'a'} {pn}. I will give its first sense from the dictionary."
                docs.append(chat(q, a, r))
            else:
                docs.append(chat(q, a))
        elif k.startswith("verse"):
            idx = rng.randrange(len(verse_list) - 1)
            b, c, v, t = verse_list[idx]
            if k == "verse_next":
                b2, c2, v2, t2 = verse_list[idx + 1]
                q = f"What comes after {b} {c}:{v}?"
                docs.append(chat(q, f"{b2} {c2}:{v2} says: {t2}"))
            elif k == "verse_think":
                q = rng.choice([f"Quote a verse from {b} {c}.", f"Give me a verse from the book of {b}."])
                r = f"The user wants a verse from {b}. I will quote verse {v} of chapter {c}."
                docs.append(chat(q, f"{b} {c}:{v} {t}", r))
            else:
                q = rng.choice([f"Quote a verse from {b} {c}.", f"What does {b} {c}:{v} say?", f"Recite {b} {c}:{v}.",
                                f"Give me a verse from the book of {b}."])
                docs.append(chat(q, f"{b} {c}:{v} {t}"))
        elif k == "fortune":
            _, f = rng.choice(fortunes)
            q = rng.choice(["Tell me a fortune.", "Give me a quotation.", "Say something wise.", "Tell me something funny.",
                            "Do you know a good saying?", "Share a fortune cookie."])
            docs.append(chat(q, f))
        elif k.startswith("math"):
            a_, b_ = rng.randint(0, 50), rng.randint(0, 50)
            op = rng.choice(["+", "-"]) if a_ >= b_ else "+"
            res = a_ + b_ if op == "+" else a_ - b_
            word = "plus" if op == "+" else "minus"
            q = rng.choice([f"What is {a_} {op} {b_}?", f"What is {a_} {word} {b_}?", f"Compute {a_} {op} {b_}."])
            if k == "math_think":
                docs.append(chat(q, f"{a_} {op} {b_} = {res}.", f"{a_} {word} {b_} is {res}."))
            else:
                docs.append(chat(q, f"{a_} {op} {b_} = {res}."))
        elif k == "hello":
            q, a = rng.choice(GREETINGS)
            docs.append(chat(q, a))
        elif k == "count_think":
            n = rng.randint(2, 12)
            w = rng.choice(["apples", "sheep", "stars", "loaves", "fishes", "days", "years", "cities"])
            q = f"How many {w} are there if I have {ones[n]} {w} and eat none?" if w in ("apples", "loaves", "fishes") else f"Write the number {n} in words."
            if q.startswith("Write"):
                docs.append(chat(q, f"{n} is written \"{ones[n]}\".", f"The number {n} in words is {ones[n]}."))
            else:
                docs.append(chat(q, f"There are {ones[n]} {w}.", f"Nothing was eaten, so there are still {n}."))
    return docs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/tiny_dsv4_data")
    ap.add_argument("--chat", type=int, default=15000)
    ap.add_argument("--gcide-max", type=int, default=40000)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)

    chapters = read_kjv()
    fortunes = read_fortunes()
    gcide = read_gcide()
    rng.shuffle(gcide)
    gcide = gcide[: args.gcide_max]
    print(f"kjv chapters {len(chapters)}, verses {sum(len(v) for _, _, v in chapters)}; fortunes {len(fortunes)}; gcide {len(gcide)}")

    rows = []
    for d in kjv_docs(chapters):
        rows.append(("kjv", BOS + d + EOS))
    for name, f in fortunes:
        rows.append(("fortunes", BOS + f + EOS))
    for d in gcide_docs(gcide):
        rows.append(("gcide", BOS + d + EOS))
    for d in make_chat(chapters, fortunes, gcide, rng, args.chat):
        rows.append(("chat", d))
    rng.shuffle(rows)
    stats = {}
    with open(os.path.join(args.out, "corpus.jsonl"), "w") as f:
        for src, text in rows:
            sp = split_of(text)
            stats.setdefault((src, sp), [0, 0])
            stats[(src, sp)][0] += 1
            stats[(src, sp)][1] += len(text)
            f.write(json.dumps({"src": src, "split": sp, "text": text}, ensure_ascii=False) + "\n")
    for k in sorted(stats):
        print(k, "docs", stats[k][0], "chars", stats[k][1])
    with open(os.path.join(args.out, "gcide_sample.txt"), "w") as f:
        for w, pos, d in gcide[:200]:
            f.write(f"{w}\t{pos}\t{d}\n")


if __name__ == "__main__":
    main()
