"""Errors: the exception hierarchy, and vectors refused with nothing written."""

import numpy as np
import pytest

import folio
from conftest import DIM, unit_vectors


def test_hierarchy():
    for cls in [folio.StoreError, folio.NotFound, folio.InvalidArgument, folio.Conflict, folio.EmbedError]:
        assert issubclass(cls, folio.Error)
    assert issubclass(folio.LockedError, folio.StoreError)
    assert issubclass(folio.ReadOnlyError, folio.StoreError)


def test_typed_errors_with_the_rust_message(store, tmp_path):
    with pytest.raises(folio.NotFound, match="no store at"):
        folio.Store.open(tmp_path / "missing.folio", create=False)
    with pytest.raises(folio.StoreError, match="not a folio store"):
        (tmp_path / "junk.folio").write_bytes(b"not a store" * 100)
        folio.Store.open(tmp_path / "junk.folio")
    with pytest.raises(folio.NotFound, match="no index or alias `nope`"):
        store.search("x", target="nope")
    with pytest.raises(folio.NotFound):
        store.delete("never-stored")
    with pytest.raises(folio.NotFound):
        store.search("x", target="default@99")
    with pytest.raises(folio.InvalidArgument, match="unknown format"):
        store.upsert("a", "text", format="docx")
    with pytest.raises(folio.InvalidArgument, match="expand"):
        store.search("x", expand="chapter")
    with pytest.raises(folio.InvalidArgument, match="dedup_threshold"):
        store.search("x", dedup=2.0)
    with pytest.raises(folio.InvalidArgument):
        store.tag("default", 0, "bad name!")
    with pytest.raises(folio.InvalidArgument, match="metadata"):
        store.upsert("a", "text", metadata={"x": object()})
    with pytest.raises(folio.InvalidArgument, match="index@version"):
        store.set_alias("prod", "default")
    with pytest.raises(folio.EmbedError):
        folio.Store.open(tmp_path / "other.folio", embedder="hash:0")
    store.upsert("a", "text")
    store.tag("default", 0, "t")
    with pytest.raises(folio.Conflict, match="tag"):
        store.tag("default", 1, "t")


def nothing_written(store):
    assert store.document_ids() == []
    assert [v["version"] for v in store.versions()] == [0]


@pytest.mark.parametrize(
    "vectors, message",
    [
        (np.ones((1, DIM), dtype=np.float64), "float32"),
        (np.ones((1, DIM), dtype=np.int32), "float32"),
        ([[1.0] * DIM], "float32"),
        (np.ones(DIM, dtype=np.float32), "2 dimension"),
        (np.ones((1, DIM + 1), dtype=np.float32), "dimension"),
        (np.ones((2, DIM), dtype=np.float32), "needs"),
        (np.full((1, DIM), np.nan, dtype=np.float32), "NaN"),
        (np.full((1, DIM), np.inf, dtype=np.float32), "inf"),
        ({"nope": np.ones((1, DIM), dtype=np.float32)}, "nope"),
    ],
)
def test_bad_vectors_refused_with_nothing_written(store, vectors, message):
    with pytest.raises(folio.Error, match=message):
        with store.batch() as b:
            b.upsert("good", "a fine document")
            b.upsert("bad", "one chunk", vectors=vectors)
    nothing_written(store)
    with pytest.raises(folio.Error, match=message):
        store.upsert("bad", "one chunk", vectors=vectors)
    nothing_written(store)


def test_strided_vectors_are_read_right(store):
    rng = np.random.default_rng(1)
    wide = unit_vectors(rng, 2, DIM * 2)
    view = np.ascontiguousarray(wide[:, :DIM])[:, :]  # contiguous copy for the norm
    view /= np.linalg.norm(view, axis=1, keepdims=True)
    strided = np.zeros((1, DIM * 2), dtype=np.float32)
    strided[0, ::2] = view[0]
    store.upsert("s", "one chunk", vectors=strided[:, ::2])
    hit = store.search(view[0], k=1)[0]
    assert hit.doc_id == "s" and abs(hit.score - 1.0) < 1e-5


@pytest.mark.parametrize(
    "query, error",
    [
        (np.ones(DIM, dtype=np.float64), folio.InvalidArgument),
        (np.ones((1, DIM), dtype=np.float32), folio.InvalidArgument),
        (np.ones(DIM + 1, dtype=np.float32), folio.InvalidArgument),
        (np.full(DIM, np.nan, dtype=np.float32), folio.InvalidArgument),
        (np.zeros(DIM, dtype=np.float32), folio.InvalidArgument),
        (42, folio.InvalidArgument),
    ],
)
def test_bad_query_vectors(store, query, error):
    with pytest.raises(error):
        store.search(query)


def test_bad_numbers_are_invalid_arguments_and_value_errors(store):
    assert issubclass(folio.InvalidArgument, ValueError) and issubclass(folio.InvalidArgument, folio.Error)
    store.upsert("a", "some text")
    for call in [
        lambda: store.search("x", k=-1),
        lambda: store.search("x", token_budget=-5),
        lambda: store.search("x", ef=-1),
        lambda: store.tag("default", -1, "t"),
        lambda: store.rollback("default", -2),
        lambda: store.feedback(-1, rating="up"),
        lambda: folio.eval("d.jsonl", "q.jsonl", ["structure:500"], k=[-1]),
    ]:
        with pytest.raises(folio.InvalidArgument, match="must be 0 or more") as raised:
            call()
        assert isinstance(raised.value, ValueError)
    with pytest.raises(ValueError, match="expand"):
        store.search("x", expand="everything")
