#!/usr/bin/env python3
"""Many reader processes on one index: their summed memory, for folio (segments mapped from
shared files, and read into each process), hnswlib (each process loads the index) and
usearch (each process views the mapped index file), run one after another.

Each reader opens the index, runs every query once (recall@10 against the kit's exact
neighbours), says so, and waits; once all N readers wait, the summed proportional set size
(PSS: a page shared by k processes counts 1/k to each) and resident size are read from
/proc/PID/smaps_rollup, then the readers are let go. folio's readers are `folio bench ann
--reuse-store --read-only --hold` (the dataset's base vectors freed once checked);
the others are this script's `worker` command.

  shared_readers.py build-hnswlib SET INDEX [--threads 2]
  shared_readers.py build-usearch SET INDEX [--threads 2]
  shared_readers.py measure --set SET --folio BIN --store STORE --hnswlib INDEX \
      --usearch INDEX [--counts 1,4,8] [--resident-counts 1,4] [--no-peers] [--ef 64] [--json OUT]
  shared_readers.py worker hnswlib|usearch SET INDEX --ef 64
  shared_readers.py qps OUT/qps-*.json
  shared_readers.py registry-corpus REGISTRY_SRC OUT [--bytes 40000000]
  shared_readers.py lexical --folio BIN --store STORE [--counts 1,4,8] [--query Q]
      [--mode lexical|dense] [--embedder SPEC] [--json OUT]

`registry-corpus`: copies the `.md` and `.rs` files (UTF-8, at most 200 kB each) of the
crates of a cargo registry's source folder, crate by crate in name order, until BYTES are
copied: a text corpus for `folio ingest`.
`lexical`: the summed memory of N `folio search --mode lexical --hold` readers of a store
(one lexical search loads every segment's postings), with segments and postings mapped from
shared files against read into each process; one unmeasured mapped reader makes the files
first. `--mode dense`: the same readers searching by vector, which never load postings (what
the postings add is the difference).

Linux only (smaps_rollup). Needs numpy, hnswlib and usearch (scripts/bench/requirements.txt),
except `lexical`, which needs only Python.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

try:
    import numpy as np
except ImportError:  # `lexical` needs none
    np = None

M = 16
EF_CONSTRUCTION = 200


def read_vecs(path, dtype):
    raw = np.fromfile(path, dtype=np.int32)
    dim = int(raw[0])
    return raw.reshape(-1, dim + 1)[:, 1:].view(dtype).copy()


def dataset(folder):
    with open(os.path.join(folder, "meta.json")) as fh:
        meta = json.load(fh)
    queries = read_vecs(os.path.join(folder, "query.fvecs"), np.float32)
    truth = read_vecs(os.path.join(folder, "gt", "none.ivecs"), np.int32)
    return meta, queries, truth


def base(folder):
    return read_vecs(os.path.join(folder, "base.fvecs"), np.float32)


def space(meta):
    return "l2" if meta["metric"] == "l2" else "ip"


def build_hnswlib(args):
    import hnswlib

    meta, _, _ = dataset(args.set)
    xb = base(args.set)
    index = hnswlib.Index(space=space(meta), dim=xb.shape[1])
    index.init_index(max_elements=len(xb), M=M, ef_construction=EF_CONSTRUCTION, random_seed=1)
    t0 = time.time()
    index.add_items(xb, np.arange(len(xb)), num_threads=args.threads)
    index.save_index(args.index)
    print(f"hnswlib: built {len(xb)} x {xb.shape[1]} in {time.time() - t0:.1f}s -> {args.index}")


def build_usearch(args):
    from usearch.index import Index

    meta, _, _ = dataset(args.set)
    xb = base(args.set)
    index = Index(
        ndim=xb.shape[1],
        metric=space(meta),
        dtype="f32",
        connectivity=M,
        expansion_add=EF_CONSTRUCTION,
    )
    t0 = time.time()
    index.add(np.arange(len(xb)), xb, threads=args.threads)
    index.save(args.index)
    print(f"usearch: built {len(xb)} x {xb.shape[1]} in {time.time() - t0:.1f}s -> {args.index}")


def worker(args):
    """Open the index, run every query once, report, hold until stdin closes."""
    meta, queries, truth = dataset(args.set)
    k = 10
    t0 = time.time()
    if args.peer == "hnswlib":
        import hnswlib

        index = hnswlib.Index(space=space(meta), dim=queries.shape[1])
        index.load_index(args.index)
        index.set_ef(args.ef)
        index.set_num_threads(1)
        opened = time.time() - t0

        def search(q):
            return index.knn_query(q, k=k)[0][0]

    else:
        from usearch.index import Index

        index = Index.restore(args.index, view=True)
        index.expansion_search = args.ef
        opened = time.time() - t0

        def search(q):
            return index.search(q, k, threads=1).keys

    t1 = time.time()
    found = [search(q) for q in queries]
    seconds = time.time() - t1
    hits = sum(len(set(map(int, f)) & set(map(int, t[:k]))) for f, t in zip(found, truth))
    report = dict(
        peer=args.peer,
        ef=args.ef,
        recall=hits / (k * len(queries)),
        qps=len(queries) / seconds,
        open_seconds=opened,
    )
    print(json.dumps(report), file=sys.stderr, flush=True)
    print("holding", file=sys.stderr, flush=True)
    sys.stdin.readline()


def memory_kb(pid):
    """(Pss, Rss) of a process in KiB."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 2 and parts[0].endswith(":"):
                fields[parts[0][:-1]] = parts[1]
    return int(fields["Pss"]), int(fields["Rss"])


def run_readers(commands, env=None):
    """Starts every command, waits until each printed `holding` on stderr, sums their
    memory, lets them go. Returns (pss MiB, rss MiB, the JSON lines they printed)."""
    procs = [
        subprocess.Popen(c, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env)
        for c in commands
    ]
    reports = []
    try:
        for p in procs:
            lines = []
            for line in p.stderr:
                lines.append(line)
                if line.strip() == "holding":
                    break
                if line.startswith("{"):
                    reports.append(json.loads(line))
                elif line.startswith("[folio]"):
                    # `folio bench ann`'s point line: ... recall=0.9876 qps=  1234.5 ...
                    point = dict(re.findall(r"(\w+)=\s*([0-9.]+)", line))
                    reports.append(dict(recall=float(point["recall"]), qps=float(point["qps"])))
            else:
                raise RuntimeError(f"{p.args} ended before holding:\n{''.join(lines[-20:])}")
        pss = rss = 0
        for p in procs:
            a, b = memory_kb(p.pid)
            pss, rss = pss + a, rss + b
    finally:
        for p in procs:
            if p.stdin:
                p.stdin.close()
        for p in procs:
            p.wait()
    return pss / 1024, rss / 1024, reports


def folio_command(args, shared, json_out=None):
    command = [
        args.folio, "--shared-segments", "on" if shared else "off", "bench", "ann",
        "--data", args.set, "--store", args.store, "--reuse-store", "--read-only",
        "--filters", "none", "--ef", str(args.ef), "--time-budget", "1000",
        "--min-queries", "1000000", "--hold",
    ]
    if json_out:
        command += ["--json", json_out]
    return command


def measure(args):
    counts = [int(c) for c in args.counts.split(",")]
    resident_counts = [int(c) for c in (args.resident_counts or args.counts).split(",")]
    here = os.path.abspath(__file__)
    systems = [
        ("folio mapped", lambda: folio_command(args, True)),
        ("folio resident", lambda: folio_command(args, False)),
        ("hnswlib", lambda: [sys.executable, here, "worker", "hnswlib", args.set, args.hnswlib,
                             "--ef", str(args.ef)]),
        ("usearch view", lambda: [sys.executable, here, "worker", "usearch", args.set,
                                  args.usearch, "--ef", str(args.ef)]),
    ]
    if not args.peers:
        systems = systems[:2]
    rows = []
    for name, command in systems:
        for n in resident_counts if name == "folio resident" else counts:
            t0 = time.time()
            pss, rss, reports = run_readers([command() for _ in range(n)])
            row = dict(system=name, readers=n, pss_mib=round(pss, 1), rss_mib=round(rss, 1),
                       seconds=round(time.time() - t0, 1))
            if reports:
                row["recall"] = round(float(np.mean([r["recall"] for r in reports])), 4)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(ef=args.ef, set=os.path.basename(os.path.normpath(args.set)),
                           rows=rows), fh, indent=1)
    print()
    print("| system | readers | summed PSS, MiB | per reader, MiB | summed RSS, MiB |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['system']} | {r['readers']} | {r['pss_mib']:.0f} | "
              f"{r['pss_mib'] / r['readers']:.0f} | {r['rss_mib']:.0f} |")


def qps(args):
    """QPS and recall of one reader per mode, from `folio bench ann --json` files named
    qps-MODE-R.json (MODE: mapped, resident, baseline; R: the round): per ef, each mode's
    mean recall and median QPS, and the median of the per-round ratios to resident."""
    points = {}
    for path in args.files:
        mode, round_ = os.path.basename(path)[len("qps-"):-len(".json")].rsplit("-", 1)
        with open(path) as fh:
            for r in json.load(fh)["records"]:
                if "qps" in r and r.get("ef") is not None:
                    points.setdefault((r["ef"], mode), {})[round_] = (r["qps"], r["recall"])
    modes = [m for m in ("mapped", "resident", "baseline") if any(k[1] == m for k in points)]
    others = [m for m in modes if m != "resident"]
    head = ["ef"] + [f"recall@10 {m}" for m in modes] + [f"QPS {m}" for m in modes]
    head += [f"{m} / resident" for m in others]
    print("| " + " | ".join(head) + " |")
    print("|" + "---:|" * len(head))
    for ef in sorted({ef for ef, _ in points}):
        if any((ef, m) not in points for m in modes):
            continue
        cells = [str(ef)]
        cells += [f"{np.mean([x for _, x in points[(ef, m)].values()]):.4f}" for m in modes]
        cells += [f"{np.median([q for q, _ in points[(ef, m)].values()]):.0f}" for m in modes]
        resident = points[(ef, "resident")]
        for m in others:
            ratios = [q / resident[r][0] for r, (q, _) in points[(ef, m)].items() if r in resident]
            cells.append(f"{np.median(ratios):.3f}")
        print("| " + " | ".join(cells) + " |")


def registry_corpus(args):
    total = 0
    for crate in sorted(os.listdir(args.registry)):
        if total > args.bytes:
            break
        for dirpath, _, names in sorted(os.walk(os.path.join(args.registry, crate))):
            for name in sorted(names):
                src = os.path.join(dirpath, name)
                if not name.endswith((".md", ".rs")) or os.path.getsize(src) > 200_000:
                    continue
                try:
                    with open(src, encoding="utf-8") as fh:
                        fh.read()
                except (UnicodeDecodeError, OSError):
                    continue
                dst = os.path.join(args.out, os.path.relpath(src, args.registry))
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copyfile(src, dst)
                total += os.path.getsize(src)
    print(f"{total} bytes copied to {args.out}")


def lexical_command(args, shared):
    command = [args.folio, "--shared-segments", "on" if shared else "off", "search", args.store,
               args.query, "--mode", args.mode, "--k", "10", "--hold"]
    if args.embedder:
        command += ["--embedder", args.embedder]
    return command


def folder_mib(folder, suffix):
    if not os.path.isdir(folder):
        return 0.0
    sizes = [os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
             if f.endswith(suffix)]
    return sum(sizes) / 2**20


def lexical(args):
    counts = [int(c) for c in args.counts.split(",")]
    shutil.rmtree(args.store + ".segments", ignore_errors=True)
    run_readers([lexical_command(args, True)])
    rows = []
    for name, shared in (("folio mapped", True), ("folio resident", False)):
        for n in counts:
            t0 = time.time()
            pss, rss, _ = run_readers([lexical_command(args, shared) for _ in range(n)])
            row = dict(system=name, readers=n, pss_mib=round(pss, 1), rss_mib=round(rss, 1),
                       seconds=round(time.time() - t0, 1))
            rows.append(row)
            print(json.dumps(row), flush=True)
    files = dict(store_mib=round(os.path.getsize(args.store) / 2**20, 1),
                 seg_mib=round(folder_mib(args.store + ".segments", ".seg"), 1),
                 lex_mib=round(folder_mib(args.store + ".segments", ".lex"), 1))
    print(json.dumps(files))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(query=args.query, mode=args.mode, files=files, rows=rows), fh,
                      indent=1)
    print()
    print("| system | readers | summed PSS, MiB | per reader, MiB | summed RSS, MiB |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['system']} | {r['readers']} | {r['pss_mib']:.0f} | "
              f"{r['pss_mib'] / r['readers']:.0f} | {r['rss_mib']:.0f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("build-hnswlib", "build-usearch"):
        p = sub.add_parser(name)
        p.add_argument("set")
        p.add_argument("index")
        p.add_argument("--threads", type=int, default=2)
    p = sub.add_parser("measure")
    p.add_argument("--set", required=True)
    p.add_argument("--folio", required=True)
    p.add_argument("--store", required=True)
    p.add_argument("--hnswlib")
    p.add_argument("--usearch")
    p.add_argument("--no-peers", dest="peers", action="store_false",
                   help="folio only (no hnswlib or usearch index needed)")
    p.add_argument("--counts", default="1,4,8")
    p.add_argument("--resident-counts",
                   help="reader counts for folio resident (default: --counts), e.g. 1,4 at 1M")
    p.add_argument("--ef", type=int, default=64)
    p.add_argument("--json")
    p = sub.add_parser("worker")
    p.add_argument("peer", choices=["hnswlib", "usearch"])
    p.add_argument("set")
    p.add_argument("index")
    p.add_argument("--ef", type=int, default=64)
    p = sub.add_parser("qps")
    p.add_argument("files", nargs="+")
    p = sub.add_parser("registry-corpus")
    p.add_argument("registry")
    p.add_argument("out")
    p.add_argument("--bytes", type=int, default=40_000_000)
    p = sub.add_parser("lexical")
    p.add_argument("--folio", required=True)
    p.add_argument("--store", required=True)
    p.add_argument("--counts", default="1,4,8")
    p.add_argument("--query", default="error handling configuration")
    p.add_argument("--mode", default="lexical",
                   help="the readers' search mode: lexical, or dense (postings never loaded)")
    p.add_argument("--embedder", help="the store's --embedder, when not the default")
    p.add_argument("--json")
    args = ap.parse_args()
    {"build-hnswlib": build_hnswlib, "build-usearch": build_usearch, "measure": measure,
     "worker": worker, "qps": qps, "lexical": lexical, "registry-corpus": registry_corpus}[args.command](args)


if __name__ == "__main__":
    main()
