#!/usr/bin/env python3
"""A randomly initialised cross-encoder of cross-encoder/ms-marco-MiniLM-L-6-v2's shape (BERT,
6 layers, hidden 384, 12 heads, intermediate 1536, vocab 30522, one label), as a Hugging Face
folder and an ONNX graph of the same weights, and the (query, passage) pairs
benches/rerank_throughput.rs and scripts/bench/rerank_ort.py time (docs/benchmarks/rerank.md).

  scripts/bench/rerank_model.py --tokenizer MINILM/tokenizer.json --out DIR

The tokenizer is any tokenizer.json of bert-base-uncased's 30,522-token vocabulary (the
MiniLM cross-encoders' own; all-MiniLM-L6-v2's, which scripts/ci/test_models.sh installs,
is the same vocabulary), copied with its limit set to 512 tokens. Writes DIR/config.json,
tokenizer.json, model.safetensors, model.onnx, and pairs.json: 20 queries of 10 words, each
with 50 passages of 120 words (1,000 pairs), words drawn with a fixed seed from the
vocabulary's whole words. Needs numpy and onnx (scripts/bench/requirements-rerank.txt).
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
import cross_encoder_model as model  # noqa: E402

SHAPE = model.Shape(vocab=30522, hidden=384, layers=6, heads=12, intermediate=1536,
                    positions=512, types=2, family="bert")
QUERIES, PASSAGES, QUERY_WORDS, PASSAGE_WORDS = 20, 50, 10, 120


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with open(args.tokenizer) as f:
        tokenizer = json.load(f)
    vocab = tokenizer["model"]["vocab"]
    assert len(vocab) == SHAPE.vocab, "not bert-base-uncased's vocabulary: %d tokens" % len(vocab)
    tokenizer["truncation"] = {"direction": "Right", "max_length": 512,
                               "strategy": "LongestFirst", "stride": 0}
    tokenizer["padding"] = None
    rng = np.random.default_rng(32)
    # A trained model's weights are of this order (std 0.02 as BERT initialises them).
    weights = model.random_weights(SHAPE, rng, 0.02)
    model.write_folder(args.out, SHAPE, weights, tokenizer)
    model.write_onnx(os.path.join(args.out, "model.onnx"), SHAPE, weights)
    words = sorted(w for w in vocab if w.isalpha() and w.isascii() and len(w) >= 3)
    def sentence(n):
        return " ".join(words[i] for i in rng.integers(0, len(words), n))
    pairs = [{"query": sentence(QUERY_WORDS),
              "passages": [sentence(PASSAGE_WORDS) for _ in range(PASSAGES)]}
             for _ in range(QUERIES)]
    with open(os.path.join(args.out, "pairs.json"), "w") as f:
        json.dump(pairs, f)


if __name__ == "__main__":
    main()
