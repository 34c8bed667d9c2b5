"""Issue 30, items 2 and 4: while `folio ingest` embeds 400 documents with MiniLM, tag,
rollback and alias set, and four processes searching with --log; counts what succeeded and
whether every logged search is in the log afterwards.
Usage: while_embedding.py FOLIO WORK_DIR MINILM_FOLDER"""
import subprocess, sys, time, os, json, threading, shutil
folio, work, model = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(work, ignore_errors=True); os.makedirs(work + "/docs")
emb = ["--embedder", f"bert:{model}"]
S = work + "/s.folio"
open(work + "/first.md", "w").write("# Deploys\n\nRedeploy the previous build to undo one.\n")
def run(*args):
    return subprocess.run([folio, *args], capture_output=True, text=True, cwd=work)
r = run("ingest", S, "first.md", *emb); assert r.returncode == 0, r.stderr
for i in range(400):
    open(f"{work}/docs/note{i}.md", "w").write(f"# Note {i}\n\nThe travel desk books trains for trip {i}. Hotels are limited to a nightly rate set by the region, and receipts go to finance within a week of the return. Ask the desk for exceptions to trip {i}.\n")
ingest = subprocess.Popen([folio, "ingest", S, "docs", *emb], cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
time.sleep(3)
results = {"tag/rollback/alias": [0, 0], "search --log": [0, 0]}
errors = set(); ids = []
lock = threading.Lock()
def note(kind, r):
    with lock:
        results[kind][0 if r.returncode == 0 else 1] += 1
        if r.returncode != 0: errors.add(r.stderr.strip().splitlines()[-1].split(" (waited")[0][:140] if r.stderr.strip() else f"exit {r.returncode}")
def logger():
    for _ in range(5):
        r = run("search", S, "trains for a trip", "--log", "--json", *emb)
        note("search --log", r)
        if r.returncode == 0:
            with lock: ids.append(json.loads(r.stdout)["request_id"])
threads = [threading.Thread(target=logger) for _ in range(4)]
for t in threads: t.start()
for n in range(3):
    for args in (["tag", S, "default@1", f"before{n}"], ["rollback", S, "default", "1"], ["alias", "set", S, "prod", "default@1:100"]):
        note("tag/rollback/alias", run(*args))
for t in threads: t.join()
during = ingest.poll() is None
if during:
    ingest.kill()
ingest.wait()
exported = run("log", "export", S)
logged = {json.loads(l)["request_id"] for l in exported.stdout.splitlines() if l.strip()} if exported.returncode == 0 else set()
print(f"ingest (400 documents, MiniLM) still embedding when the commands ended: {during}")
for k, (ok, bad) in results.items():
    print(f"{k}: {ok} succeeded, {bad} failed")
print(f"logged searches answered with an id: {len(ids)}, of them in the log afterwards: {len(set(ids) & logged)}")
for e in sorted(errors): print("error:", e)
