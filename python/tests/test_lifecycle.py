"""Opening, batches (commit on exit, rollback on exception), documents, closing."""

import pytest

import folio

RUNBOOK = "# Deploys\n\n## Rollback\n\nRun the rollback command to restore the previous build.\n"


def test_batch_commits_on_exit_and_search_finds_it(store):
    with store.batch() as b:
        b.upsert("runbook", RUNBOOK, format="markdown", acl=["eng"], title="Runbook")
        b.upsert("menu", "Pasta with tomatoes and basil.")
        assert len(b) == 2
    assert store.document_ids() == ["menu", "runbook"]
    result = store.search("restore the previous build", k=3, principals=["eng"])
    top = result[0]
    assert top.doc_id == "runbook"
    assert top.section_path == ["Deploys", "Rollback"]
    assert top.title == "Runbook"
    assert "rollback command" in top.text
    assert RUNBOOK[top.start : top.end] == top.text
    assert top.spans and all(top.start <= s.start < s.end <= top.end for s in top.spans)
    assert (top.index, top.version) == ("default", 1) == (result.index, result.version)


def test_batch_rolls_back_on_exception(store):
    store.upsert("kept", "first text")
    with pytest.raises(RuntimeError):
        with store.batch() as b:
            b.upsert("lost", "never written")
            b.delete("kept")
            raise RuntimeError("boom")
    assert store.document_ids() == ["kept"]
    assert [v["version"] for v in store.versions()] == [0, 1]


def test_batch_commit_and_rollback_are_final(store):
    b = store.batch()
    b.upsert("a", "alpha")
    receipt = b.commit()
    assert receipt["upserted"] == 1 and receipt["versions"] == {"default": 1}
    with pytest.raises(folio.StoreError):
        b.upsert("b", "beta")
    r = store.batch()
    r.upsert("c", "gamma")
    r.rollback()
    with pytest.raises(folio.StoreError):
        r.commit()
    assert store.document_ids() == ["a"]


def test_delete_set_acl_and_metadata(store):
    store.upsert("doc", "secret plans", acl=["alice"], metadata={"team": "core"})
    assert store.document("doc")["metadata"] == {"team": "core"}
    assert store.document("doc")["acl"] == ["alice"]
    assert len(store.search("secret plans", principals=["bob"])) == 0
    store.set_acl("doc", ["bob"])
    assert store.search("secret plans", principals=["bob"])[0].doc_id == "doc"
    assert len(store.search("secret plans", principals=["alice"])) == 0
    store.delete("doc")
    assert store.document("doc") is None
    assert len(store.search("secret plans", unrestricted=True)) == 0


def test_typed_metadata_and_filters(store):
    with store.batch() as b:
        b.upsert("old", "refund policy", metadata={"team": "sre", "level": 2, "draft": True,
                                                    "tags": ["faq", "pay"], "updated": "2023-05-01"})
        b.upsert("new", "refund policy v2", metadata={"team": "ops", "level": 5, "draft": False,
                                                       "tags": ["pay"], "updated": "2024-02-01"})
    assert store.document("old")["metadata"] == {
        "team": "sre", "level": 2.0, "draft": True, "tags": ["faq", "pay"], "updated": "2023-05-01"}
    hits = store.search("refund", k=5, filter='tags contains "faq" or level > 4', dedup=None)
    assert sorted(h.doc_id for h in hits) == ["new", "old"]
    (hit,) = store.search("refund", k=5, filter="updated >= 2024-01-01 and not draft = true")
    assert hit.doc_id == "new" and hit.metadata["team"] == "ops" and hit.metadata["level"] == 5.0
    with pytest.raises(folio.InvalidArgument, match="filter"):
        store.search("refund", filter="level >")


def test_expand_and_token_budget(store):
    text = "# Guide\n\n" + "\n\n".join(f"Paragraph {i} about topic {i} and more words." for i in range(40))
    store.upsert("guide", text, format="markdown")
    section = store.search("topic 7", k=1, expand="section")[0]
    window = store.search("topic 7", k=1, expand=1, dedup=None)[0]
    assert len(window.text) <= len(section.text)
    assert len(store.search("topic", k=5, token_budget=1)) == 0


def test_token_budget_in_the_readers_tokens(store):
    text = "# Guide\n\n" + "\n\n".join(f"Paragraph {i} about topic {i}, naïve café." for i in range(40))
    store.upsert("guide", text, format="markdown")
    ask = dict(k=5, expand=1, dedup=None)
    # "chars" counts code points, as Python's len does: each hit's tokens are its length.
    full = store.search("topic", budget_tokens="chars", **ask)
    assert len(full) > 1 and all(h.tokens == len(h.text) for h in full)
    budget = full[0].tokens + 1
    hits = store.search("topic", token_budget=budget, budget_tokens="chars", **ask)
    assert hits and sum(len(h.text) for h in hits) <= budget < sum(len(h.text) for h in full)
    # OpenAI's cl100k, bundled in the wheel: fewer tokens than characters, within the budget.
    cl_full = store.search("topic", budget_tokens="cl100k", **ask)
    assert all(0 < h.tokens < len(h.text) for h in cl_full)
    cl = store.search("topic", token_budget=cl_full[0].tokens, budget_tokens="cl100k", **ask)
    assert cl and sum(h.tokens for h in cl) <= cl_full[0].tokens
    with pytest.raises(folio.InvalidArgument, match="budget_tokens"):
        store.search("topic", budget_tokens="words")


def test_source_code_format(store):
    source = "def rollback(build):\n    return restore(build)\n\n\ndef menu():\n    return 'pasta'\n"
    store.upsert("ops.py", source, format="python")
    hit = store.search("rollback restore build", k=1)[0]
    assert hit.doc_id == "ops.py" and "def rollback" in hit.text


def test_close_and_reopen(tmp_path):
    path = tmp_path / "kb.folio"
    s = folio.Store.open(path, embedder="hash:32")
    s.upsert("a", "persisted text")
    s.close()
    assert s.closed
    with pytest.raises(folio.StoreError, match="closed"):
        s.search("persisted")
    with folio.Store.open(path, create=False, embedder="hash:32") as again:
        assert again.search("persisted text")[0].doc_id == "a"
    with folio.Store.open(path, read_only=True, embedder="hash:32") as reader:
        assert reader.document_ids() == ["a"]
        with pytest.raises(folio.ReadOnlyError):
            reader.upsert("b", "no")


def test_plan_gives_the_chunks_vectors_are_for(store):
    planned = store.plan("doc", RUNBOOK, format="markdown")
    assert [c["chunk_id"] for c in planned] == [f"doc#c{i}" for i in range(len(planned))]
    assert all("Rollback" in c["embed_text"] or "Deploys" in c["embed_text"] for c in planned)
    assert store.document_ids() == []


def test_request_log_and_feedback(tmp_path):
    with folio.Store.open(tmp_path / "log.folio", embedder="hash:32", log_requests=True) as s:
        s.upsert("a", "logged text")
        result = s.search("logged", principals=["x"])
        s.feedback(result.request_id, rating="up", note="good")
        (entry,) = s.log_entries()
        assert entry["request_id"] == result.request_id
        assert entry["principals"] == ["x"]
        assert entry["feedback"]["rating"] == "thumb_up"


def test_an_unchanged_document_makes_no_version_and_is_not_embedded_again(store):
    first = store.upsert("guide", "# Guide\n\nRead me.", format="markdown", acl=["b", "a"], metadata={"team": "sre"})
    versions = store.versions()
    again = store.upsert("guide", "# Guide\n\nRead me.", format="markdown", acl=["a", "b", " a"], metadata={"team": "sre"})
    assert again["unchanged"] == 1 and again["upserted"] == 0
    assert again["versions"] == first["versions"] and store.versions() == versions
    with store.batch() as batch:
        batch.upsert("guide", "# Guide\n\nRead me.", format="markdown", acl=["a", "b"], metadata={"team": "sre"})
        batch.upsert("other", "new text")
    assert len(store.versions()) == len(versions) + 1
    # A change of text, metadata or ACL is a change; so is an upsert beside a delete of it.
    assert store.upsert("guide", "# Guide\n\nRead me.", format="markdown", acl=["a"], metadata={"team": "sre"})["unchanged"] == 0
    with store.batch() as batch:
        batch.delete("other")
        batch.upsert("other", "new text")
    assert store.document("other")["text"] == "new text"
