"""Lexical and hybrid search and reranking from Python: `Store.search(mode=..., rerank=...)`,
`folio.Reranker`, and both adapters passing them through on the caller's own vectors."""

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

import folio
from folio.langchain import FolioVectorStore as LangChainStore
from folio.llama_index import FolioVectorStore as LlamaStore

TEXTS = {
    "a": "the invoice was paid by card",
    "b": "zqxjvk is the rare word in this note",
    "c": "cards and payments and refunds",
    "d": "a note about the weather",
}


def shortest_first(query, texts):
    """A stand-in cross-encoder: shorter texts score higher."""
    return [-float(len(t)) for t in texts]


@pytest.fixture
def notes(store):
    with store.batch() as b:
        for doc_id, text in TEXTS.items():
            b.upsert(doc_id, text)
    return store


def test_each_mode_ranks_and_names_itself_and_its_stage_scores(notes):
    lexical = notes.search("zqxjvk", mode="lexical", unrestricted=True)
    assert lexical.mode == "lexical" and [h.doc_id for h in lexical] == ["b"]
    assert set(lexical[0].scores) == {"lexical"} and lexical[0].scores["lexical"] > 0
    hybrid = notes.search("zqxjvk note", mode="hybrid", unrestricted=True, k=4)
    assert hybrid.mode == "hybrid" and hybrid[0].doc_id == "b"
    assert {"dense", "lexical", "fused"} <= set(hybrid[0].scores)
    assert hybrid[0].score == pytest.approx(hybrid[0].scores["fused"])
    rrf = notes.search("zqxjvk", mode="hybrid", rrf_k=10, unrestricted=True)
    assert rrf[0].score == pytest.approx(2 / 11)  # first in both legs: 1/(10+1) twice
    dense = notes.search("zqxjvk", unrestricted=True)
    assert dense.mode == "dense" and set(dense[0].scores) == {"dense"}


def test_settings_a_mode_would_ignore_are_refused(notes):
    for kwargs in (
        {"mode": "lexical", "rrf_k": 5},
        {"mode": "hybrid", "rrf_k": 5, "dense_weight": 0.5},
        {"mode": "hybrid", "fusion": "max"},
        {"mode": "sparse"},
        {"rerank_top": 5},
    ):
        with pytest.raises(folio.InvalidArgument):
            notes.search("note", **kwargs)


def test_a_python_reranker_reorders_the_best_units_and_is_named(notes):
    reranker = folio.Reranker.from_function("shortest", shortest_first)
    assert reranker.name == "shortest"
    assert reranker.score("q", ["ab", "a"]) == [-2.0, -1.0]
    result = notes.search("note card", k=2, rerank=reranker, rerank_top=4, unrestricted=True)
    lengths = sorted(len(t) for t in TEXTS.values())
    assert result.reranker == "shortest"
    assert [len(h.text) for h in result] == lengths[:2]
    assert [h.scores["rerank"] for h in result] == [-float(n) for n in lengths[:2]]


def test_a_failing_python_reranker_fails_the_search(notes):
    def broken(query, texts):
        raise RuntimeError("model not loaded")

    with pytest.raises(folio.Error, match="model not loaded"):
        notes.search("note", rerank=folio.Reranker.from_function("broken", broken), unrestricted=True)


def test_langchain_hybrid_and_rerank_run_on_the_callers_vectors(tmp_path):
    store = folio.Store.open(tmp_path / "lc.folio")
    vs = LangChainStore(store, DeterministicFakeEmbedding(size=16), mode="hybrid", search_options={"dense_weight": 0.2})
    vs.add_texts(list(TEXTS.values()), ids=list(TEXTS))
    # The fake embedding knows no words: the lexical leg, weighted 0.8, finds the rare one.
    found = vs.similarity_search("zqxjvk", k=1)
    assert found[0].id == "b"
    # A search's own arguments override the store's (here all of them: a lexical search
    # takes no fusion weight).
    lexical = vs.similarity_search("zqxjvk", k=4, mode="lexical", dense_weight=None)
    assert [d.id for d in lexical] == ["b"]
    reranked = LangChainStore(
        store, DeterministicFakeEmbedding(size=16), rerank=folio.Reranker.from_function("short", shortest_first),
        search_options={"rerank_top": 4},
    )
    docs = reranked.similarity_search("note", k=4)
    assert [len(d.page_content) for d in docs] == sorted(len(t) for t in TEXTS.values())
    store.close()


def test_llama_index_query_modes_map_to_folios(tmp_path):
    store = folio.Store.open(tmp_path / "li.folio")
    vs = LlamaStore(store)
    rng = np.random.default_rng(7)
    vs.add([TextNode(id_=k, text=t, embedding=rng.standard_normal(8).tolist()) for k, t in TEXTS.items()])
    embedding = rng.standard_normal(8).tolist()
    sparse = vs.query(VectorStoreQuery(query_str="zqxjvk", query_embedding=embedding, similarity_top_k=4,
                                       mode=VectorStoreQueryMode.TEXT_SEARCH))
    assert sparse.ids == ["b"]
    hybrid = vs.query(VectorStoreQuery(query_str="zqxjvk", query_embedding=embedding, similarity_top_k=2,
                                       mode=VectorStoreQueryMode.HYBRID, alpha=0.0))
    # alpha 0: all words; the weighted sum gives the only lexical match 1.
    assert hybrid.ids[0] == "b" and hybrid.similarities[0] == pytest.approx(1.0)
    dense = vs.query(VectorStoreQuery(query_embedding=embedding, similarity_top_k=4))
    assert len(dense.ids) == 4
    with pytest.raises(ValueError, match="mmr"):
        vs.query(VectorStoreQuery(query_str="x", query_embedding=embedding, mode=VectorStoreQueryMode.MMR))
    store.close()
