"""Searches from 8 Python threads while another thread ingests: no failure, no hidden
document, versions never go backwards within a thread."""

import threading

import numpy as np

from conftest import unit_vectors


def test_eight_searchers_during_ingest(store):
    store.upsert("seed", "seed document about deploys")
    rng = np.random.default_rng(3)
    stop = threading.Event()
    failures, counts = [], [0] * 8

    def search(n):
        last = 0
        try:
            while not stop.is_set():
                query = "deploy rollback" if n % 2 else unit_vectors(rng, 1)[0]
                result = store.search(query, k=5, principals=["eng"])
                assert result.version >= last
                last = result.version
                assert len(result) <= 5
                assert all(not h.doc_id.startswith("secret") for h in result)
                counts[n] += 1
        except Exception as e:  # collected, so a failure fails the test, not just a thread
            failures.append(e)

    threads = [threading.Thread(target=search, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    try:
        for batch in range(20):
            with store.batch() as b:
                for i in range(10):
                    b.upsert(f"doc-{batch}-{i}", f"deploy note {batch} {i}", acl=["eng"])
                    b.upsert(f"secret-{batch}-{i}", f"deploy secret {batch} {i}", acl=["hr"])
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert failures == []
    assert all(c > 0 for c in counts)
    head = store.versions()[-1]["version"]
    assert head >= 21 and store.search("deploy", k=5, principals=["eng"]).version == head
