"""Issue 30, item 1, from the command line: damaged copies of a store of the demo corpus
(random bytes, the header, cut short, a zeroed page; fixed seed), each searched, read, written
and checked; counts panics, wrong answers, damage `check` missed and "not a folio store".
Usage: damage_cli.py FOLIO WORK_DIR DEMO_DIR"""
import subprocess, sys, os, json, random, shutil
folio, work = sys.argv[1], sys.argv[2]
demo = sys.argv[3]
shutil.rmtree(work, ignore_errors=True); os.makedirs(work)
S = work + "/pristine.folio"
def run(*args, cwd=work):
    return subprocess.run([folio, *args], capture_output=True, text=True, cwd=cwd, timeout=120)
# File ids relative to the store's folder ("docs/NAME.md"), as both builds make them.
shutil.copytree(demo, work + "/docs")
r = run("ingest", S, "docs"); assert r.returncode == 0, r.stderr
r = run("acl", S, "docs/expense-policy.md", "finance"); assert r.returncode == 0, r.stderr
QUERIES = ["refund a card payment", "deploy rollback", "laptop replacement", "travel expenses"]
PRINCIPALS = [[], ["--as", "finance"]]
DOCS = ["docs/" + f for f in sorted(os.listdir(demo)) if f.endswith(".md")]
def answers(path):
    out = []
    for q in QUERIES:
        for p in PRINCIPALS:
            r = run("search", path, q, *p, "--json")
            if r.returncode == 0:
                j = json.loads(r.stdout)
                out.append(("ok", [(h.get("doc_id"), h.get("text"), round(h.get("score", 0), 5)) for h in j["results"]]))
            else:
                out.append(("err", r.returncode, r.stderr[-300:]))
    for d in DOCS:
        r = run("chunks", path, d, "--json")
        out.append(("ok", r.stdout) if r.returncode == 0 else ("err", r.returncode, r.stderr[-300:]))
    return out
pristine_bytes = open(S, "rb").read()
expected = answers(S)
assert all(a[0] == "ok" for a in expected), expected
rng = random.Random(0x5EED)
stats = dict(cases=0, panics=0, wrong=0, changed=0, check_missed=0, not_a_store=0)
D = work + "/damaged.folio"
def fresh(b):
    open(D, "wb").write(b)
for kind in ["bytes", "header", "truncate", "zeropage"]:
    for _ in range(10):
        b = bytearray(pristine_bytes)
        if kind in ("bytes", "header"):
            span = 4096 if kind == "header" else len(b)
            for _ in range(8):
                at = rng.randrange(span); b[at] ^= rng.randrange(1, 256)
        elif kind == "truncate":
            b = b[:rng.randrange(len(b))]
        else:
            page = rng.randrange(len(b) // 4096) * 4096
            b[page:page + 4096] = bytes(min(4096, len(b) - page))
        b = bytes(b)
        stats["cases"] += 1
        fresh(b); got = answers(D)
        fresh(b); writer = run("tag", D, "default@1", "t")
        fresh(b); check = run("check", D)
        texts = [g[2] for g in got if g[0] == "err"] + [writer.stderr, check.stderr]
        codes = [g[1] for g in got if g[0] == "err"] + [writer.returncode, check.returncode]
        if 101 in codes: stats["panics"] += 1
        if any("not a folio store" in t for t in texts): stats["not_a_store"] += 1
        wrong = any(g[0] == "ok" and g != e for g, e in zip(got, expected))
        if wrong: stats["wrong"] += 1
        changed = any(g != e for g, e in zip(got, expected)) or writer.returncode != 0
        if changed:
            stats["changed"] += 1
            if check.returncode == 0: stats["check_missed"] += 1
print(json.dumps(stats))
