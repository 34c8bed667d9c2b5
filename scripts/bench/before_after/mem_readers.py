"""Summed PSS of N reader processes (mem_probe.rs: open read-only, one search, hold).
Usage: mem_readers.py PROBE STORE COUNTS   e.g. mem_readers.py target/release/examples/mem_probe s.folio 1,4,8"""
import subprocess, sys

probe, store, counts = sys.argv[1], sys.argv[2], [int(c) for c in sys.argv[3].split(",")]

def pss_kib(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        return sum(int(line.split()[1]) for line in f if line.startswith("Pss:"))

for n in counts:
    procs = [subprocess.Popen([probe, store], stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(n)]
    for p in procs:
        for line in p.stderr:
            if line.strip() == "holding":
                break
        else:
            raise SystemExit(f"a reader ended before holding (exit {p.wait()})")
    total = sum(pss_kib(p.pid) for p in procs) / 1024
    for p in procs:
        p.stdin.close()
        p.wait()
    print(f"| {n} | {total:.0f} | {total / n:.0f} |", flush=True)
