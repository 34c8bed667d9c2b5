#!/usr/bin/env python3
"""Run peers' chunkers over a documents file and write their chunks as folio external chunks.

Install (Python 3.11, in a venv) scripts/eval/requirements.txt, the versions of
../shared/bench/CHUNK_ANCHORS.md:

    pip install -r scripts/eval/requirements.txt

Usage:

    python scripts/eval/peer_chunks.py --docs ../shared/data/conditionalqa/docs.jsonl \
        --out target/eval/peers/conditionalqa \
        [--size 500] [--peers lc-rec,sts-md]

Input: JSON Lines with at least `doc_id` and `text` (the format of shared/data/*/docs.jsonl).
Output: DIR/<peer>.jsonl, one chunk a line:
`{"doc_id": ..., "start": byte_start, "end": byte_end, "text": ...}`, byte offsets into the
document's UTF-8 text, end exclusive; `text` is that slice of the document. The `+hdr` peers
add `embed_text`: the chunk's heading path (LangChain's header metadata, joined by " > ") and
a blank line before the text, as CHUNK_ANCHORS.md's `+hdr` rows embed it; `folio eval` embeds
that and still returns and scores `text`.

Peers return chunk strings, not offsets, so each chunk is located in its document: an exact
search forward from the previous chunk's end less the peer's overlap (but not before the
previous chunk's start), then the same search ignoring whitespace and zero-width
characters (LangChain's Markdown header splitter rejoins lines with "  \\n" and drops some
no-break and zero-width spaces). Chunks found neither way are counted as unlocated and left
out.
"""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

# A chunk's text, and what to embed instead of it (None: the text itself).
Chunk = tuple[str, "str | None"]
Chunker = Callable[[str], list[Chunk]]

OVERLAP = 80
MARKDOWN_HEADERS = [("#", "h1"), ("##", "h2"), ("###", "h3"), ("####", "h4")]


@dataclass(frozen=True)
class Peer:
    """A chunker and the most characters two of its consecutive chunks share."""

    make: Callable[[int], Chunker]
    overlap: int


def bare(split: Callable[[str], list[str]]) -> Chunker:
    """A chunker whose chunks embed their own text."""
    return lambda text: [(chunk, None) for chunk in split(text)]


def lc_recursive(size: int, overlap: int) -> Chunker:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    return bare(RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap).split_text)


def lc_markdown_recursive(size: int, strip_headers: bool, heading_path: bool) -> Chunker:
    from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter

    headers = MarkdownHeaderTextSplitter(MARKDOWN_HEADERS, strip_headers=strip_headers)
    recursive = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=0)

    def embedded(d) -> str | None:
        path = " > ".join(d.metadata[key] for _, key in MARKDOWN_HEADERS if key in d.metadata)
        return f"{path}\n\n{d.page_content}" if heading_path and path else None

    return lambda text: [
        (d.page_content, embedded(d))
        for d in recursive.split_documents(headers.split_text(text))
    ]


def sts_text(size: int) -> Chunker:
    from semantic_text_splitter import TextSplitter

    return bare(TextSplitter(size).chunks)


def sts_markdown(size: int) -> Chunker:
    from semantic_text_splitter import MarkdownSplitter

    return bare(MarkdownSplitter(size).chunks)


def chonkie_recursive(size: int) -> Chunker:
    from chonkie import RecursiveChunker

    chunker = RecursiveChunker(tokenizer="character", chunk_size=size)
    return lambda text: [(c.text, None) for c in chunker.chunk(text)]


PEERS: dict[str, Peer] = {
    "lc-rec": Peer(lambda size: lc_recursive(size, 0), 0),
    "lc-rec-ov80": Peer(lambda size: lc_recursive(size, OVERLAP), OVERLAP),
    "lc-md-rec": Peer(lambda size: lc_markdown_recursive(size, False, False), 0),
    # As CHUNK_ANCHORS.md counted it (1,380 chunks on conditionalqa): heading lines removed.
    "lc-md-rec-strip": Peer(lambda size: lc_markdown_recursive(size, True, False), 0),
    # CHUNK_ANCHORS.md's lc-md-rec500+hdr: those chunks with their heading path embedded.
    "lc-md-rec-strip+hdr": Peer(lambda size: lc_markdown_recursive(size, True, True), 0),
    # The heading lines kept in the text as well as in the path.
    "lc-md-rec+hdr": Peer(lambda size: lc_markdown_recursive(size, False, True), 0),
    "sts-text": Peer(sts_text, 0),
    "sts-md": Peer(sts_markdown, 0),
    "chonkie-rec": Peer(chonkie_recursive, 0),
}


class Locator:
    """Finds chunk strings in one document, in order, and turns code points into bytes."""

    def __init__(self, text: str) -> None:
        self.text = text
        # Byte offset of every code point (and of the end); None when text is ASCII.
        self.byte_at = None if text.isascii() else [0, *accumulate(len(c.encode()) for c in text)]
        self.spaceless, self.origin = without_invisible(text)
        self.prev: tuple[int, int] | None = None  # previous chunk, in code points

    def locate(self, chunk: str, overlap: int) -> tuple[int, int] | None:
        """The code-point range of `chunk`, searched forward from the previous chunk."""
        # An overlapping peer may repeat the whole previous chunk: never start before it.
        start = 0 if self.prev is None else max(self.prev[0], self.prev[1] - overlap)
        found = self.exact(chunk, start) or self.spaceless_search(chunk, start)
        if found:
            self.prev = found
        return found

    def exact(self, chunk: str, start: int) -> tuple[int, int] | None:
        i = self.text.find(chunk, start)
        return None if i < 0 else (i, i + len(chunk))

    def spaceless_search(self, chunk: str, start: int) -> tuple[int, int] | None:
        needle, _ = without_invisible(chunk)
        if not needle:
            return None
        # Search from the first kept character at or after `start` in the original.
        i = self.spaceless.find(needle, bisect_left(self.origin, start))
        if i < 0:
            return None
        return self.origin[i], self.origin[i + len(needle) - 1] + 1

    def to_bytes(self, pos: int) -> int:
        return pos if self.byte_at is None else self.byte_at[pos]


def invisible(c: str) -> bool:
    """Whitespace or a format character such as a zero-width space."""
    return c.isspace() or unicodedata.category(c) == "Cf"


def without_invisible(text: str) -> tuple[str, list[int]]:
    """`text` without invisible characters, and the original position of each one kept."""
    origin = [i for i, c in enumerate(text) if not invisible(c)]
    return "".join(text[i] for i in origin), origin


def read_docs(path: Path) -> list[dict]:
    docs = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            doc = json.loads(line)
            if not (isinstance(doc.get("doc_id"), str) and isinstance(doc.get("text"), str)):
                raise SystemExit(f"{path}:{n}: a document needs string fields doc_id and text")
            docs.append(doc)
    return docs


def run_peer(name: str, peer: Peer, size: int, docs: list[dict], out: Path) -> tuple[int, int]:
    """Writes out/<name>.jsonl; returns (chunks written, chunks not located)."""
    chunker = peer.make(size)
    written = unlocated = 0
    with (out / f"{name}.jsonl").open("w", encoding="utf-8") as f:
        for doc in docs:
            locator = Locator(doc["text"])
            for chunk, embed_text in chunker(doc["text"]):
                if not chunk.strip():
                    continue
                found = locator.locate(chunk, peer.overlap)
                if found is None:
                    unlocated += 1
                    continue
                start, end = found
                record = {
                    "doc_id": doc["doc_id"],
                    "start": locator.to_bytes(start),
                    "end": locator.to_bytes(end),
                    "text": doc["text"][start:end],
                }
                if embed_text is not None:
                    record["embed_text"] = embed_text
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
                written += 1
    return written, unlocated


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, required=True, help="documents, JSON Lines")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--size", type=int, default=500, help="chunk size in characters")
    parser.add_argument(
        "--peers",
        default=",".join(PEERS),
        help=f"comma-separated, from: {', '.join(PEERS)} (default: all)",
    )
    args = parser.parse_args()
    names = [n for n in args.peers.split(",") if n]
    unknown = [n for n in names if n not in PEERS]
    if unknown:
        parser.error(f"unknown peer(s): {', '.join(unknown)}")
    if args.size <= OVERLAP and any(PEERS[n].overlap for n in names):
        parser.error(f"--size must exceed the {OVERLAP}-character overlap")

    docs = read_docs(args.docs)
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"{len(docs)} documents from {args.docs}")
    failed = False
    for name in names:
        try:
            written, unlocated = run_peer(name, PEERS[name], args.size, docs, args.out)
        except ImportError as e:
            print(
                f"{name:16} skipped: {e} (see the pip line at the top of this script)",
                file=sys.stderr,
            )
            failed = True
            continue
        print(
            f"{name:16} {written:6} chunks, {unlocated} unlocated -> {args.out / (name + '.jsonl')}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
