"""Resident memory of an hnswlib build and reopen over a kit dataset, measured the way
`folio bench ann` measures its own: VmRSS after minus before (the base vectors already
loaded), and the peak (VmHWM, reset just before through /proc/self/clear_refs) minus before.

Usage: PY scripts/bench/hnswlib_memory.py DATA/clustered-128 [--threads 2] [--m 16] [--efc 200] [--json OUT]
Prints one line per measurement (and with --json writes them as one build record in the kit's
results.json shape, with folio's field names); needs the kit's venv (numpy, hnswlib:
scripts/bench/requirements.txt).
"""
import argparse
import json
import os
import tempfile
import time

import numpy as np
import hnswlib


def status(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def reset_peak():
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def read_fvecs(path):
    raw = np.fromfile(path, dtype=np.int32)
    dim = int(raw[0])
    return raw.reshape(-1, dim + 1)[:, 1:].copy().view(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--efc", type=int, default=200)
    ap.add_argument("--json")
    args = ap.parse_args()
    meta = json.load(open(os.path.join(args.data, "meta.json")))
    space = "l2" if meta["metric"] == "l2" else "ip"
    xb = read_fvecs(os.path.join(args.data, "base.fvecs"))
    n, dim = xb.shape

    before = status("VmRSS")
    reset_peak()
    t0 = time.perf_counter()
    index = hnswlib.Index(space=space, dim=dim)
    index.init_index(max_elements=n, ef_construction=args.efc, M=args.m, random_seed=100)
    index.add_items(xb, np.arange(n), num_threads=args.threads)
    seconds = time.perf_counter() - t0
    after, peak = status("VmRSS"), status("VmHWM")
    record = {"type": "build", "peer": "hnswlib", "threads": args.threads, "seconds": seconds, "n": n,
              "rss_delta_mb": after - before, "rss_peak_delta_mb": peak - before}
    print(f"hnswlib build n={n} dim={dim} threads={args.threads}: {seconds:.1f} s, "
          f"rss +{after - before:.0f} MiB, peak +{peak - before:.0f} MiB")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "index.bin")
        index.save_index(path)
        del index
        before = status("VmRSS")
        reset_peak()
        index = hnswlib.Index(space=space, dim=dim)
        index.load_index(path, max_elements=n)
        after, peak = status("VmRSS"), status("VmHWM")
        record.update(reopen_rss_delta_mb=after - before, reopen_rss_peak_delta_mb=peak - before,
                      index_bytes=os.path.getsize(path))
        print(f"hnswlib reopen: rss +{after - before:.0f} MiB, peak +{peak - before:.0f} MiB, "
              f"file {os.path.getsize(path) / 2**20:.0f} MiB")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(record, fh)


if __name__ == "__main__":
    main()
