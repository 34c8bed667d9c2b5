"""What a search through Python costs beyond the same search in Rust, on one store.

Builds a store of N random 128-d unit vectors (one per document, brought as numpy arrays),
then times Q vector searches at k=10 from Python (perf_counter around `store.search`) and
reads, for each, the time the Rust `Store::search` itself took (`SearchResult.micros`):
the difference is the binding (arguments, releasing the GIL, result objects).

    target/python/venv/bin/python scripts/bench/python_overhead.py [N] [Q]   # after scripts/ci/test_python.sh
"""

import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import folio

N = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
Q = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000
DIM, BATCH = 128, 10_000

rng = np.random.default_rng(0)
with tempfile.TemporaryDirectory() as tmp:
    with folio.Store.open(Path(tmp) / "bench.folio", embedder=f"hash:{DIM}") as store:
        started = time.perf_counter()
        for first in range(0, N, BATCH):
            vectors = rng.standard_normal((BATCH, DIM)).astype(np.float32)
            with store.batch() as b:
                for i in range(BATCH):
                    b.upsert(f"d{first + i}", f"document {first + i}", vectors=vectors[i : i + 1])
        ingest = time.perf_counter() - started
        queries = rng.standard_normal((Q, DIM)).astype(np.float32)
        for q in queries[:200]:  # warm up: segments loaded, caches filled
            store.search(q, k=10, dedup=None)
        python_us, rust_us = [], []
        for q in queries:
            t = time.perf_counter()
            result = store.search(q, k=10, dedup=None)
            python_us.append((time.perf_counter() - t) * 1e6)
            rust_us.append(result.micros)
            assert len(result) == 10
        py, rs = statistics.median(python_us), statistics.median(rust_us)
        over = [p - r for p, r in zip(python_us, rust_us)]
        print(f"{N} vectors x {DIM}, ingest {ingest:.1f} s ({N / ingest:,.0f} docs/s from Python)")
        print(f"{Q} queries, k=10: median Python {py:.1f} us, Rust {rs:.1f} us, "
              f"overhead median {statistics.median(over):.1f} us ({(py - rs) / rs:.1%})")
