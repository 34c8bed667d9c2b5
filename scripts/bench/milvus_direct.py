#!/usr/bin/env python3
"""Direct pymilvus searches of one collection: the "direct" row of the remote latency figure in
docs/milvus.md (milvus/tests/milvus/remote.rs, `measure_publish_and_search`, runs it).

  python milvus_direct.py < searches.json

The input is one JSON object: `uri`, `collection`, `rounds`, and `searches`, a list of
{"vector": [...], "expr": "...", "limit": N} exactly as folio sent them to Milvus (the same
query vector, filter expression and limit; optionally "output_fields", default ["child"]),
searched at Strong consistency like folio's.
One untimed warm-up pass, then `rounds` passes, each search timed alone around the client
call. Prints one JSON line: {"searches": N, "p50_ms": ..., "p95_ms": ..., "rows": [...]},
`rows` the number of rows each search of the first timed pass returned, for the caller's
check that both sides asked the same thing.
"""
import json
import sys
import time

from pymilvus import MilvusClient


def search(client, collection, item):
    return client.search(
        collection_name=collection,
        data=[item["vector"]],
        anns_field="vector",
        filter=item["expr"],
        limit=item["limit"],
        output_fields=item.get("output_fields", ["child"]),
        consistency_level="Strong",
    )


def main():
    spec = json.load(sys.stdin)
    client = MilvusClient(uri=spec["uri"])
    collection, searches = spec["collection"], spec["searches"]
    for item in searches:
        search(client, collection, item)
    times, rows = [], []
    for round_ in range(spec["rounds"]):
        for item in searches:
            started = time.perf_counter()
            answer = search(client, collection, item)
            times.append((time.perf_counter() - started) * 1e3)
            if round_ == 0:
                rows.append(len(answer[0]))
    times.sort()
    print(
        json.dumps(
            {
                "searches": len(times),
                "p50_ms": times[len(times) // 2],
                "p95_ms": times[len(times) * 95 // 100],
                "rows": rows,
            }
        )
    )


if __name__ == "__main__":
    main()
