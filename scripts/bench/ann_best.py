#!/usr/bin/env python3
"""folio against the best peer per filter, round by round (docs/benchmarks/ann.md).

Usage: ann_best.py ROUND_DIR [ROUND_DIR ...]; each holds results.json (faiss, hnswlib,
usearch), exact/results.json and folio.json, as scripts/bench/ann_bench.sh writes them. Prints a
Markdown table: per filter, the best peer (by median QPS over rounds), folio's median QPS,
the median of folio / best-peer-of-the-same-round with the per-round ratios, and folio /
hnswlib. QPS is the best single-thread QPS at recall@10 >= 0.95."""
import json
import statistics
import sys

TARGET = 0.95
FILTERS = ["none", "random_0.5", "correlated_0.5", "random_0.1", "correlated_0.1",
           "random_0.01", "correlated_0.01", "random_0.001", "correlated_0.001"]


def best(records):
    out = {}
    for r in records:
        if r.get("type") != "search" or r.get("recall", 0) < TARGET:
            continue
        key = (r["peer"], r["filter"])
        out[key] = max(out.get(key, 0.0), r["qps"])
    return out


def load(d):
    recs = []
    for f in ("results.json", "exact/results.json", "folio.json"):
        recs += json.load(open(f"{d}/{f}"))["records"]
    return best(recs)


rounds = [load(d) for d in sys.argv[1:]]
print("| filter | best peer (median QPS) | folio (median QPS) | **folio / best** [rounds] | folio / hnswlib |")
print("|---|---|---:|---:|---:|")
for f in FILTERS:
    ratios, hn, folio, peers = [], [], [], {}
    for r in rounds:
        others = {p: q for (p, ff), q in r.items() if ff == f and p != "folio"}
        for p, q in others.items():
            peers.setdefault(p, []).append(q)
        fq = r.get(("folio", f))
        if fq is None or not others:
            continue
        folio.append(fq)
        ratios.append(fq / max(others.values()))
        if ("hnswlib", f) in r:
            hn.append(fq / r[("hnswlib", f)])
    if not ratios:
        continue
    top = max(peers, key=lambda p: statistics.median(peers[p]))
    rr = " ".join(f"{x:.2f}" for x in ratios)
    h = f"{statistics.median(hn):.2f}" if hn else "-"
    print(f"| {f} | {top} {statistics.median(peers[top]):,.0f} | {statistics.median(folio):,.0f} | "
          f"**{statistics.median(ratios):.2f}** [{rr}] | {h} |")
