"""Ingest throughput from Python: folio beside Chroma and LanceDB, same texts, same vectors.

N short synthetic documents (seeded) with N precomputed 384-d float32 unit vectors (no model
anywhere), written in batches of BATCH into a fresh temporary directory per store and timed
from the first write until the last commit has returned:

- folio: `store.batch()` with `upsert(..., vectors=)` per document, one commit per batch
  (chunks the text, writes documents, chunks and vectors; a segment of at least 4,096 rows
  gets its graph built inside the commit).
- Chroma: `PersistentClient`, `collection.add(ids, embeddings, documents)` per batch
  (SQLite log plus its HNSW index, built as rows arrive); cosine space; no embedding function.
- LanceDB: `create_table` with the first batch, `table.add` for the rest (Arrow columns
  written as Lance fragments, no index); then `create_index` (IVF_PQ, cosine) timed apart.

Sizes are the bytes of every file in the store's directory after it is closed.

    pip install -r scripts/bench/requirements-ingest.txt target/python/wheels/folio_store-*.whl
    python scripts/bench/python_ingest_peers.py [N] [BATCH] [folio,chroma,lance]
"""

import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
BATCH = int(sys.argv[2]) if len(sys.argv) > 2 else 5_000
ONLY = sys.argv[3].split(",") if len(sys.argv) > 3 else ["folio", "chroma", "lance"]
DIM = 384

rng = np.random.default_rng(7)
WORDS = [f"w{i}" for i in range(5_000)]
texts = [
    " ".join(WORDS[j] for j in rng.integers(0, len(WORDS), size=int(rng.integers(20, 40)))) + "."
    for _ in range(N)
]
ids = [f"d{i}" for i in range(N)]
vectors = rng.standard_normal((N, DIM)).astype(np.float32)
vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
batches = [range(first, min(first + BATCH, N)) for first in range(0, N, BATCH)]


def size_of(path):
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def run_folio(dir):
    import folio

    path = Path(dir) / "bench.folio"
    with folio.Store.open(path, embedder=f"hash:{DIM}") as store:
        # One chunk per document is what makes "one vector each" the same input as the peers.
        assert all(len(store.plan(ids[i], texts[i])) == 1 for i in range(0, N, max(1, N // 50)))
        started = time.perf_counter()
        for rows in batches:
            with store.batch() as b:
                for i in rows:
                    b.upsert(ids[i], texts[i], vectors=vectors[i : i + 1])
        seconds = time.perf_counter() - started
    return seconds, size_of(dir), "no"


def run_chroma(dir):
    import chromadb

    client = chromadb.PersistentClient(path=str(dir))
    collection = client.create_collection(
        "bench", embedding_function=None, metadata={"hnsw:space": "cosine"}
    )
    started = time.perf_counter()
    for rows in batches:
        collection.add(
            ids=ids[rows.start : rows.stop],
            embeddings=vectors[rows.start : rows.stop],
            documents=texts[rows.start : rows.stop],
        )
    seconds = time.perf_counter() - started
    assert collection.count() == N
    return seconds, size_of(dir), "no (HNSW built during add)"


def run_lance(dir):
    import lancedb
    import pyarrow as pa
    from lancedb.index import IvfPq

    def table_of(rows):
        flat = pa.array(vectors[rows.start : rows.stop].reshape(-1))
        return pa.table(
            {
                "id": ids[rows.start : rows.stop],
                "text": texts[rows.start : rows.stop],
                "vector": pa.FixedSizeListArray.from_arrays(flat, DIM),
            }
        )

    db = lancedb.connect(str(dir))
    started = time.perf_counter()
    table = db.create_table("bench", table_of(batches[0]))
    for rows in batches[1:]:
        table.add(table_of(rows))
    seconds = time.perf_counter() - started
    assert table.count_rows() == N
    size = size_of(dir)
    started = time.perf_counter()
    table.create_index("vector", config=IvfPq(distance_type="cosine"))
    index = time.perf_counter() - started
    return seconds, size, f"{index:.1f} s (IVF_PQ), {size_of(dir) / 1e6:.1f} MB with it"


STORES = {  # key: (name in the table, run, package)
    "folio": ("folio", run_folio, "folio_store"),
    "chroma": ("Chroma", run_chroma, "chromadb"),
    "lance": ("LanceDB", run_lance, "lancedb"),
}
print(f"{N} documents, {DIM}-d float32 vectors, batches of {BATCH}; "
      + ", ".join(f"{STORES[k][2]} {version(STORES[k][2])}" for k in ONLY))
print("| store | documents/s | seconds | on disk | index build apart |")
print("|---|---|---|---|---|")
for name, run, _ in (STORES[k] for k in ONLY):
    with tempfile.TemporaryDirectory() as tmp:
        seconds, size, after = run(tmp)
        print(f"| {name} | {N / seconds:,.0f} | {seconds:.2f} | {size / 1e6:.1f} MB | {after} |",
              flush=True)
