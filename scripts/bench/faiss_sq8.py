"""faiss IndexHNSWSQ (8-bit scalar quantizer: only the codes and links are held, no f32
vectors) over a kit dataset, as the peer of folio's compressed mode: resident memory of the
build, of the reopen and after the searches (VmRSS after minus before, the base vectors
already loaded; peaks from VmHWM, reset through /proc/self/clear_refs), then the kit's ef
sweep per filter (single-thread QPS, recall@k against the kit's exact ground truth). The
kit's ann_peers.py has no SQ8 peer; this reuses its timing and recall code.

Usage: PY scripts/bench/faiss_sq8.py DATA/clustered-128 [--kit ../shared/bench] [--threads 2] [--m 16]
           [--efc 200] [--queries 500] [--time-budget 1] [--min-queries 100] [--stop-recall 0.99]
           [--json OUT]
Prints one line per measurement; --json writes the records (kit results.json shape, peer
`faiss-sq8`) for `ann_peers.py --merge`. PY is the kit's venv (scripts/bench/requirements.txt).
"""
import argparse
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hnswlib_memory import reset_peak, status  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--kit", default=os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "bench"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--efc", type=int, default=200)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--queries", type=int)
    ap.add_argument("--ef", default="10,16,24,32,48,64,96,128,192,256,384,512")
    ap.add_argument("--time-budget", type=float, default=3.0)
    ap.add_argument("--min-queries", type=int, default=100)
    ap.add_argument("--stop-recall", type=float, default=0.999)
    ap.add_argument("--json")
    args = ap.parse_args()
    sys.path.insert(0, os.path.abspath(args.kit))
    import faiss
    from ann_data import read_fvecs, read_ivecs, read_u32
    from ann_peers import recall_at, timed_queries

    meta = json.load(open(os.path.join(args.data, "meta.json")))
    metric = faiss.METRIC_L2 if meta["metric"] == "l2" else faiss.METRIC_INNER_PRODUCT
    xb = read_fvecs(os.path.join(args.data, "base.fvecs"))
    xq = read_fvecs(os.path.join(args.data, "query.fvecs"))
    if args.queries:
        xq = xq[:args.queries]
    n, dim = xb.shape
    records = []

    before = status("VmRSS")
    reset_peak()
    faiss.omp_set_num_threads(args.threads)
    t0 = time.perf_counter()
    index = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_8bit, args.m, metric)
    index.hnsw.efConstruction = args.efc
    index.train(xb)
    index.add(xb)
    seconds = time.perf_counter() - t0
    after, peak = status("VmRSS"), status("VmHWM")
    build = {"type": "build", "peer": "faiss-sq8", "threads": args.threads, "seconds": seconds, "n": n,
             "rss_delta_mb": after - before, "rss_peak_delta_mb": peak - before}
    print(f"faiss-sq8 build n={n} dim={dim} threads={args.threads}: {seconds:.1f} s, "
          f"rss +{after - before:.0f} MiB, peak +{peak - before:.0f} MiB", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "index.faiss")
        faiss.write_index(index, path)
        del index
        before = status("VmRSS")
        reset_peak()
        t0 = time.perf_counter()
        index = faiss.read_index(path)
        build.update(reopen_seconds=time.perf_counter() - t0,
                     reopen_rss_delta_mb=status("VmRSS") - before,
                     reopen_rss_peak_delta_mb=status("VmHWM") - before,
                     index_bytes=os.path.getsize(path))
    print(f"faiss-sq8 reopen: rss +{build['reopen_rss_delta_mb']:.0f} MiB, "
          f"peak +{build['reopen_rss_peak_delta_mb']:.0f} MiB, file {build['index_bytes'] / 2**20:.0f} MiB",
          flush=True)

    faiss.omp_set_num_threads(1)
    filters = ["none"] + [f["name"] for f in meta["filters"]]
    efs = [int(x) for x in args.ef.split(",") if x]
    for name in filters:
        gt = read_ivecs(os.path.join(args.data, "gt", name + ".ivecs"))[:len(xq)]
        sel, bitmap = None, None
        if name != "none":
            mask = np.zeros(n, dtype=bool)
            mask[read_u32(os.path.join(args.data, "filters", name + ".u32"))] = True
            bitmap = np.packbits(mask, bitorder="little")
            sel = faiss.IDSelectorBitmap(n, faiss.swig_ptr(bitmap))

        class Peer:
            def search(self, q, k, ef):
                params = faiss.SearchParametersHNSW(efSearch=ef)
                if sel is not None:
                    params.sel = sel
                return index.search(q, k, params=params)[1].astype(np.int64)

        peer = Peer()
        peer.search(xq[:min(50, len(xq))], args.k, efs[0])
        for ef in efs:
            out, done, spent = timed_queries(peer, xq, args.k, ef, args.time_budget, args.min_queries)
            rc = recall_at(out, gt[:done], args.k)
            got = (out >= 0).sum(1)
            records.append({"type": "search", "peer": "faiss-sq8", "filter": name, "ef": ef, "recall": rc,
                            "qps": done / spent, "n_queries": int(done), "seconds": spent,
                            "short_frac": float((got < args.k).mean()), "mean_returned": float(got.mean())})
            print(f"[faiss-sq8] {name:<18} ef={ef:>4} recall@{args.k}={rc:.4f} qps={done / spent:>9.1f} "
                  f"n={done} short={records[-1]['short_frac']:.2f}", flush=True)
            if rc >= args.stop_recall:
                break
    build["search_rss_delta_mb"] = status("VmRSS") - before
    print(f"faiss-sq8 after the searches: rss +{build['search_rss_delta_mb']:.0f} MiB over the reopen's baseline",
          flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"records": [build] + records}, fh)


if __name__ == "__main__":
    main()
