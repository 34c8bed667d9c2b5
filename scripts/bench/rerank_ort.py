#!/usr/bin/env python3
"""Pairs per second of onnxruntime's Python InferenceSession on a cross-encoder's ONNX graph:
the Python side of benches/rerank_throughput.rs (docs/benchmarks/rerank.md).

  scripts/bench/rerank_ort.py DIR [--threads N] [--runs R]

DIR is scripts/bench/rerank_model.py's output. Each query's passages are scored in one call as
folio's CrossEncoder scores them: pairs tokenized by the `tokenizers` package's pair encoding
(the text's side cut at the limit), sorted by length, cut into batches of at most 32 pairs and
2,048 padded tokens, each batch one session run. Tokenizing is timed with the runs (folio's
figure includes it). Prints one JSON line: the best run's pairs per second, and writes every
pair's logit of that run to DIR/ort_scores.json (query by query) for the comparison.
"""
import argparse
import json
import os
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

MAX_PAIRS, MAX_TOKENS = 32, 2048


def batches(lengths):
    """folio's length_batches: rows sorted by length, capped by pairs and padded tokens."""
    out, current = [], []
    for i in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        if current and (len(current) >= MAX_PAIRS or (len(current) + 1) * lengths[i] > MAX_TOKENS):
            out.append(current)
            current = []
        current.append(i)
    if current:
        out.append(current)
    return out


def score(session, tokenizer, query, passages):
    encodings = tokenizer.encode_batch([(query, p) for p in passages])
    scores = np.zeros(len(passages), np.float32)
    for rows in batches([len(e.ids) for e in encodings]):
        longest = max(len(encodings[i].ids) for i in rows)
        feed = {name: np.zeros((len(rows), longest), np.int64)
                for name in ("input_ids", "attention_mask", "token_type_ids")}
        for r, i in enumerate(rows):
            e = encodings[i]
            feed["input_ids"][r, :len(e.ids)] = e.ids
            feed["attention_mask"][r, :len(e.ids)] = 1
            feed["token_type_ids"][r, :len(e.ids)] = e.type_ids
        scores[rows] = session.run(["logits"], feed)[0][:, 0]
    return scores


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--threads", type=int, default=0, help="0: onnxruntime's default")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(os.path.join(args.dir, "model.onnx"), options,
                                   providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(os.path.join(args.dir, "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(512, strategy="only_second")
    with open(os.path.join(args.dir, "pairs.json")) as f:
        pairs = json.load(f)
    total = sum(len(p["passages"]) for p in pairs)
    score(session, tokenizer, pairs[0]["query"], pairs[0]["passages"][:4])  # warm-up
    best, best_scores = None, None
    for _ in range(args.runs):
        start = time.perf_counter()
        scores = [score(session, tokenizer, p["query"], p["passages"]).tolist() for p in pairs]
        elapsed = time.perf_counter() - start
        if best is None or elapsed < best:
            best, best_scores = elapsed, scores
    with open(os.path.join(args.dir, "ort_scores.json"), "w") as f:
        json.dump(best_scores, f)
    print(json.dumps({"pairs": total, "seconds": best, "pairs_per_s": total / best,
                      "onnxruntime": ort.__version__, "threads": args.threads}))


if __name__ == "__main__":
    main()
