"""Issue 30, item 2: logging processes killed with SIGKILL (log_probe.rs), then the log read:
counts request ids handed out twice and annotations that landed on another request.
Usage: log_crash.py LOG_PROBE STORE"""
import subprocess, sys, time, random, os, signal, collections
probe, store = sys.argv[1], sys.argv[2]
random.seed(7)
if os.path.exists(store): os.remove(store)
subprocess.run([probe, "init", store], check=True)
printed = []  # (round, id)
for r in range(8):
    p = subprocess.Popen([probe, "run", store, f"r{r}"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    time.sleep(random.uniform(0.4, 1.2))
    os.kill(p.pid, signal.SIGKILL)
    out, _ = p.communicate()
    ids = [int(x) for x in out.split()]
    printed += [(f"r{r}", i) for i in ids]
log = {}
for line in subprocess.run([probe, "verify", store], capture_output=True, text=True, check=True).stdout.splitlines():
    parts = line.split(" ", 1)
    log[int(parts[0])] = parts[1] if len(parts) > 1 else ""
counts = collections.Counter(i for _, i in printed)
reused = sum(1 for i, c in counts.items() if c > 1)
elsewhere = 0   # an annotation that landed on a request another round was handed
for rnd, i in printed:
    note = log.get(i, "")
    if note and note != f"{rnd}:{i}" and counts[i] > 1:
        elsewhere += 1
missing = sum(1 for _, i in printed if i not in log)
print(f"handed out {len(printed)} ids in 8 killed runs; ids handed out twice: {reused}; "
      f"handed-out ids with no entry after reopen: {missing}; annotations found on another run's request: {elsewhere}")
