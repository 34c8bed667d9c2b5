"""`folio.eval`: the chunking-evaluation harness on a corpus whose right numbers are known."""

import json

import pytest

import folio

DOCS = {
    "alpha": "Zebras graze quietly near the old river.",
    "beta": "Glaciers carve deep fjords every winter.",
    "gamma": "Copper kettles whistle in the kitchen.",
}


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def gold(doc_id, needle):
    start = DOCS[doc_id].index(needle)
    return {"doc_id": doc_id, "start_byte": start, "end_byte": start + len(needle)}


@pytest.fixture
def data(tmp_path):
    docs = write_jsonl(
        tmp_path / "docs.jsonl",
        [{"doc_id": d, "text": t, "format": "text"} for d, t in DOCS.items()],
    )
    # q1 names alpha's words and its evidence is in alpha: first at every k. q2 names the
    # same words but its evidence is in beta, which shares none of them: never first, yet
    # inside the top 5 (three one-chunk documents, all returned).
    queries = write_jsonl(
        tmp_path / "queries.jsonl",
        [
            {"query_id": "q1", "query": "zebras graze quietly river", "gold_spans": [gold("alpha", "graze quietly")]},
            {"query_id": "q2", "query": "zebras graze quietly river", "gold_spans": [gold("beta", "deep fjords")]},
        ],
    )
    return docs, queries


def test_eval_returns_the_csv_rows_with_known_hits(data, tmp_path):
    docs, queries = data
    rows = folio.eval(
        docs,
        queries,
        ["fixed:500", "whole=structure:500"],
        k=[5, 1],
        embedder="hash:256",
        store_dir=tmp_path / "stores",
    )
    overall = [r for r in rows if r["group"] == "all"]
    assert [r["strategy"] for r in overall] == ["fixed:500", "whole"]
    for r in overall:
        assert r["questions"] == 2
        assert r["hit_at_1"] == pytest.approx(0.5)
        assert r["hit_at_5"] == pytest.approx(1.0)
        # q1's evidence is first (1), q2's at rank 2 or 3 of three documents.
        assert 1 / 2 + 1 / 3 <= 2 * r["mrr"] <= 1 + 1 / 2
        assert r["full"] == pytest.approx(1.0) and r["noise"] == 0.0
        assert r["chunks_per_doc"] == pytest.approx(1.0)
        assert r["vector_bytes"] == 3 * 256 * 4
        assert r["index_bytes"] > 0 and r["build_s"] >= 0.0
    # Groups are the questions' first documents; costs do not apply to them.
    groups = {(r["strategy"], r["group"]): r for r in rows if r["group"] != "all"}
    assert sorted(groups) == [(s, g) for s in ["fixed:500", "whole"] for g in ["alpha", "beta"]]
    for s in ["fixed:500", "whole"]:
        assert groups[(s, "alpha")]["hit_at_1"] == 1.0
        assert groups[(s, "beta")]["hit_at_1"] == 0.0
        assert groups[(s, "beta")]["questions"] == 1
        assert groups[(s, "beta")]["index_bytes"] is None
    # The same keys as the CSV's columns, in its order.
    assert list(rows[0])[:7] == [
        "strategy",
        "plan",
        "group",
        "questions",
        "hit_at_1",
        "hit_at_5",
        "mrr",
    ]
    assert list(rows[0])[-4:] == ["chunks_per_doc", "index_bytes", "vector_bytes", "build_s"]
    assert len({tuple(r) for r in rows}) == 1
    assert sorted(p.name for p in (tmp_path / "stores").iterdir()) == [
        "00-fixed-500.folio",
        "01-whole.folio",
    ]


def test_eval_limit_asks_the_first_questions(data):
    docs, queries = data
    (row,) = [r for r in folio.eval(docs, queries, ["fixed:500"], k=[1], limit=1) if r["group"] == "all"]
    assert (row["questions"], row["hit_at_1"]) == (1, 1.0)


def test_eval_refuses_bad_arguments(data, tmp_path):
    docs, queries = data
    with pytest.raises(folio.InvalidArgument):
        folio.eval(docs, queries, ["sideways:12"])
    with pytest.raises(folio.InvalidArgument):
        folio.eval(docs, queries, [])
    with pytest.raises(folio.InvalidArgument):
        folio.eval(docs, queries, ["fixed:500"], k=[0])
    with pytest.raises(folio.NotFound):
        folio.eval(tmp_path / "missing.jsonl", queries, ["fixed:500"])
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"query_id": "q", "query": "x", "gold_spans": [{**gold("alpha", "Zebras"), "doc_id": "nope"}]}])
    with pytest.raises(folio.InvalidArgument, match="nope"):
        folio.eval(docs, bad, ["fixed:500"])
