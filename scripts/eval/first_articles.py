#!/usr/bin/env python3
"""The first N articles of a shared data set and the questions about them.

    python scripts/eval/first_articles.py ../shared/data/drcd 50 target/eval/drcd50
    python scripts/eval/first_articles.py ../shared/data/cmrc2018 200 target/eval/cmrc200

Writes OUT/docs.jsonl (the first N lines of SET/docs.jsonl, unchanged) and, for each
questions file of SET (queries.jsonl, queries_sentence.jsonl, ...), OUT/<same name> with
the questions whose every gold span lies in those documents, in their original order.
"""

import json
import sys
from pathlib import Path


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    data, count, out = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    out.mkdir(parents=True, exist_ok=True)
    with open(data / "docs.jsonl", encoding="utf-8") as f:
        docs = [line for _, line in zip(range(count), f)]
    kept = {json.loads(line)["doc_id"] for line in docs}
    (out / "docs.jsonl").write_text("".join(docs), encoding="utf-8")
    for queries in sorted(data.glob("queries*.jsonl")):
        lines = []
        with open(queries, encoding="utf-8") as f:
            for line in f:
                question = json.loads(line)
                spans = question.get("gold_spans") or []
                if spans and all(s["doc_id"] in kept for s in spans):
                    lines.append(line)
        (out / queries.name).write_text("".join(lines), encoding="utf-8")
        print(f"{out / queries.name}: {len(lines)} questions about {len(docs)} articles")


if __name__ == "__main__":
    main()
