#!/usr/bin/env python3
"""folio's own chunks of a store, written as external chunks with other embedded texts.

Measures what folio should embed without rebuilding it: `folio eval` embeds each chunk's
`embed_text` and scores its `text`, so the variants differ only in the embedded text.

    folio eval --docs DOCS --queries Q --embed-dim 512 --strategy structure:500 --store-dir S
    python scripts/eval/embed_variants.py --docs DOCS --store S/00-structure-500.folio --out DIR

Variants (DIR/<name>.jsonl), for Markdown documents:
- `v0`: the store's own embed_text;
- `all-levels`: every heading of the chunk's section path, less those whose line it holds;
- `start-path`: the heading path at the chunk's first byte, `#` markers dropped from the text
  (the form of LangChain's header splitter with its heading path, CHUNK_ANCHORS.md's `+hdr`);
- `all-levels-strip`: every heading of the section path, `#` markers dropped from the text;
- `path-only`: every heading of the section path, the heading lines of that path dropped from
  the text and the other headings' `#` markers (LangChain's form, with folio's cut).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

HEADING = re.compile(r"^(#{1,6}) +(.*?)\s*#*\s*$")


def path_at(text: str, pos: int) -> list[str]:
    """The ATX headings whose sections hold byte `pos`."""
    path: list[str] = []  # by level; "" for a level skipped
    at = 0
    for line in text.split("\n"):
        if at > pos:
            break
        m = HEADING.match(line)
        if m:
            level = len(m.group(1))
            path = (path + [""] * level)[: level - 1] + [m.group(2)]
        at += len(line.encode()) + 1
    return [h for h in path if h]


def strip_markers(text: str) -> str:
    return "\n".join(
        m.group(2) if (m := HEADING.match(line)) else line for line in text.split("\n")
    )


def drop_headings(text: str, path: list[str]) -> str:
    """`text` without the lines of the headings in `path`, other headings without `#`."""
    lines = []
    for line in text.split("\n"):
        m = HEADING.match(line)
        if m and m.group(2) in path:
            continue
        lines.append(m.group(2) if m else line)
    return "\n".join(lines).strip()


def prefixed(path: list[str], body: str) -> str:
    return " > ".join(path) + "\n\n" + body if path else body


def variants(doc_text: str, chunk: dict) -> dict[str, str]:
    text = doc_text.encode()[chunk["start"] : chunk["end"]].decode()
    held = [m.group(2) for line in text.split("\n") if (m := HEADING.match(line))]
    path = chunk["section_path"]
    return {
        "v0": chunk["embed_text"],
        "all-levels": prefixed([h for h in path if h not in held], text),
        "start-path": prefixed(path_at(doc_text, chunk["start"]), strip_markers(text)),
        "all-levels-strip": prefixed(path, strip_markers(text)),
        "path-only": prefixed(path, drop_headings(text, path)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, required=True, help="documents, JSON Lines")
    parser.add_argument("--store", required=True, help="a store holding those documents")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--folio", default="target/release/folio", help="the folio binary")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    docs = [json.loads(line) for line in args.docs.open(encoding="utf-8") if line.strip()]
    files = {}
    for doc in docs:
        shown = subprocess.run(
            [args.folio, "chunks", args.store, doc["doc_id"], "--json"],
            capture_output=True, text=True, check=True,
        )
        for chunk in json.loads(shown.stdout):
            for name, embed_text in variants(doc["text"], chunk).items():
                if name not in files:
                    files[name] = (args.out / f"{name}.jsonl").open("w", encoding="utf-8")
                record = {k: chunk[k] for k in ("start", "end")}
                record |= {"doc_id": doc["doc_id"], "text": chunk["text"], "embed_text": embed_text}
                files[name].write(json.dumps(record, ensure_ascii=False) + "\n")
    for f in files.values():
        f.close()
    print(f"{len(docs)} documents -> {', '.join(sorted(files))} in {args.out}")


if __name__ == "__main__":
    main()
