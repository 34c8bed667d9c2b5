#!/usr/bin/env python3
"""Tables of scripts/bench/small_sets.sh's rounds (docs/benchmarks/ann.md).

Usage: small_sets.py OUT. Per dataset and filter: numpy's exact scan (median QPS over the
rounds), folio's best QPS at recall@10 >= 0.95 (median) with its recall and answers short
at that point, the median of folio / exact over the rounds with every round's ratio, and,
when the rounds also ran a FOLIO_BEFORE binary, before / exact and folio / before."""
import json
import pathlib
import statistics
import sys

TARGET = 0.95
ORDER = ["none", "random_0.1", "correlated_0.1", "random_0.01", "correlated_0.01",
         "random_0.001", "correlated_0.001"]


def best(path):
    """filter -> (qps, recall, short fraction) of the fastest point at recall >= TARGET."""
    out = {}
    if not path.exists():
        return out
    for r in json.loads(path.read_text())["records"]:
        if r.get("type") != "search" or r.get("recall", 0) < TARGET:
            continue
        point = (r["qps"], r["recall"], r.get("short_frac", 0.0))
        if point[0] > out.get(r["filter"], (0,))[0]:
            out[r["filter"]] = point
    return out


def cell(ratios):
    return f"**{statistics.median(ratios):.2f}** [{' '.join(f'{x:.2f}' for x in ratios)}]"


def main(out):
    for data in sorted(p for p in pathlib.Path(out).iterdir() if list(p.glob("round*"))):
        rounds = sorted(data.glob("round*"), key=lambda p: int(p.name[5:]))
        runs = [(best(r / "exact" / "results.json"), best(r / "folio.json"), best(r / "before.json"))
                for r in rounds]
        has_before = any(b for _, _, b in runs)
        print(f"\n{data.name}, {len(rounds)} rounds\n")
        head = "| filter | exact (QPS) | folio (QPS) | recall, short | **folio / exact** [rounds] |"
        rule = "|---|---:|---:|---|---:|"
        if has_before:
            head += " before / exact [rounds] | folio / before [rounds] |"
            rule += "---:|---:|"
        print(head)
        print(rule)
        filters = {f for e, f_, _ in runs for f in list(e) + list(f_)}
        for f in sorted(filters, key=lambda f: ORDER.index(f) if f in ORDER else len(ORDER)):
            rows = [(e.get(f), a.get(f), b.get(f)) for e, a, b in runs]
            full = [(e, a, b) for e, a, b in rows if e and a]
            if not full:
                continue
            ratio = [a[0] / e[0] for e, a, _ in full]
            recall = min(a[1] for _, a, _ in full)
            short = max(a[2] for _, a, _ in full)
            line = (f"| {f} | {statistics.median(e[0] for e, _, _ in full):,.0f} | "
                    f"{statistics.median(a[0] for _, a, _ in full):,.0f} | "
                    f"{recall:.3f}, {short:.2f} | {cell(ratio)} |")
            if has_before:
                with_b = [(e, a, b) for e, a, b in full if b]
                line += (f" {cell([b[0] / e[0] for e, _, b in with_b])} |"
                         f" {cell([a[0] / b[0] for _, a, b in with_b])} |") if with_b else " - | - |"
            print(line)


if __name__ == "__main__":
    main(sys.argv[1])
