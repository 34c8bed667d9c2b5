"""The LangChain adapter as LangChain's users write it: the framework's own standard suite
for vector stores (langchain-tests, sync and async), and the flows people use: `from_texts`
with any embedding dimension, retrievers by similarity, MMR and score threshold, dict
filters, ids, scores, and principals."""

import tempfile
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_tests.integration_tests import VectorStoreIntegrationTests

import folio
from folio.langchain import FolioVectorStore, open_store, to_folio_filter


class TestStandardSuite(VectorStoreIntegrationTests):
    """LangChain's standard tests, against `FolioVectorStore(Store.open(path), embedding)`."""

    @pytest.fixture()
    def vectorstore(self):
        folder = tempfile.mkdtemp()
        store = folio.Store.open(Path(folder) / "lc.folio")
        try:
            yield FolioVectorStore(store, embedding=self.get_embeddings())
        finally:
            store.close()


FRUITS = [
    ("apple", {"kind": "fruit", "colour": "red", "price": 3, "tags": ["sweet", "crisp"]}),
    ("banana", {"kind": "fruit", "colour": "yellow", "price": 1, "tags": ["sweet"]}),
    ("carrot", {"kind": "vegetable", "colour": "orange", "price": 2, "nested": {"a": [1, None]}}),
    ("lemon", {"kind": "fruit", "colour": "yellow", "price": 4, "organic": True}),
]


@pytest.mark.parametrize("dimension", [6, 384])
def test_from_texts_with_any_dimension_returns_the_callers_documents(tmp_path, dimension):
    embedding = DeterministicFakeEmbedding(size=dimension)
    texts = [t for t, _ in FRUITS]
    store = FolioVectorStore.from_texts(
        texts, embedding, metadatas=[m for _, m in FRUITS], ids=texts, path=tmp_path / "fruits.folio"
    )
    found = store.similarity_search_with_score("banana", k=2)
    assert found[0][0] == Document(id="banana", page_content="banana", metadata=FRUITS[1][1])
    assert found[0][1] == pytest.approx(1.0, abs=1e-5) and found[0][1] >= found[1][1]
    # The caller's metadata comes back as given, nested values and integers included.
    assert store.get_by_ids(["carrot"])[0].metadata == FRUITS[2][1]
    # A second from_texts on the same path in this process shares the open store.
    again = FolioVectorStore.from_texts(["kiwi"], embedding, ids=["kiwi"], path=tmp_path / "fruits.folio")
    assert again.store is store.store
    assert {d.id for d in again.get_by_ids(texts + ["kiwi"])} == set(texts) | {"kiwi"}


@pytest.fixture
def fruits(tmp_path):
    store = folio.Store.open(tmp_path / "fruits.folio")
    vs = FolioVectorStore(store, DeterministicFakeEmbedding(size=16))
    vs.add_texts([t for t, _ in FRUITS], [m for _, m in FRUITS], ids=[t for t, _ in FRUITS])
    yield vs
    store.close()


def ids(documents):
    return sorted(d.id for d in documents)


def test_dict_filters_are_folio_filters(fruits):
    assert ids(fruits.similarity_search("x", k=4, filter={"kind": "fruit"})) == ["apple", "banana", "lemon"]
    assert ids(fruits.similarity_search("x", k=4, filter={"colour": {"$in": ["red", "orange"]}})) == ["apple", "carrot"]
    assert ids(fruits.similarity_search("x", k=4, filter={"price": {"$gte": 3}})) == ["apple", "lemon"]
    assert ids(fruits.similarity_search("x", k=4, filter={"kind": "fruit", "price": {"$lt": 4}})) == ["apple", "banana"]
    either = {"$or": [{"colour": "red"}, {"organic": True}]}
    assert ids(fruits.similarity_search("x", k=4, filter=either)) == ["apple", "lemon"]
    assert ids(fruits.similarity_search("x", k=4, filter={"kind": {"$ne": "fruit"}})) == ["carrot"]
    assert ids(fruits.similarity_search("x", k=4, filter={"tags": "crisp"})) == ["apple"]
    assert ids(fruits.similarity_search("x", k=4, filter={"organic": {"$exists": False}})) == ["apple", "banana", "carrot"]
    assert ids(fruits.similarity_search("x", k=4, filter='colour = "yellow"')) == ["banana", "lemon"]
    assert to_folio_filter({"a b": 'say "hi"'}) == 'metadata."a b" = "say \\"hi\\""'
    with pytest.raises(ValueError):
        fruits.similarity_search("x", filter={"price": {"$near": 3}})


def test_retrievers_by_similarity_mmr_and_score_threshold(fruits):
    assert [d.id for d in fruits.as_retriever(search_kwargs={"k": 1}).invoke("lemon")] == ["lemon"]
    mmr = fruits.as_retriever(search_type="mmr", search_kwargs={"k": 2, "fetch_k": 4})
    picked = mmr.invoke("lemon")
    assert len(picked) == 2 and picked[0].id == "lemon" and len({d.id for d in picked}) == 2
    scored = fruits.similarity_search_with_relevance_scores("lemon", k=4)
    assert all(0.0 <= s <= 1.0 for _, s in scored) and scored[0][1] == pytest.approx(1.0, abs=1e-5)
    threshold = fruits.as_retriever(
        search_type="similarity_score_threshold", search_kwargs={"k": 4, "score_threshold": 0.99}
    )
    assert [d.id for d in threshold.invoke("lemon")] == ["lemon"]


def test_ids_delete_and_principals(tmp_path):
    store = folio.Store.open(tmp_path / "acl.folio")
    vs = FolioVectorStore(store, DeterministicFakeEmbedding(size=8))
    vs.add_texts(["public note"], ids=["pub"])
    vs.add_texts(["salary bands"], ids=["hr"], acl=["hr"])
    assert ids(vs.similarity_search("salary bands", k=5)) == ["pub"]
    assert ids(vs.similarity_search("salary bands", k=5, principals=["hr"])) == ["hr", "pub"]
    assert vs.delete(["hr", "missing"]) is True
    assert ids(vs.similarity_search("salary bands", k=5, principals=["hr"])) == ["pub"]
    assert vs.get_by_ids(["hr"]) == []
    store.close()


def test_open_store_shares_one_handle_per_file(tmp_path):
    first = open_store(tmp_path / "one.folio")
    assert open_store(tmp_path / "one.folio") is first
    first.close()
    assert open_store(tmp_path / "one.folio") is not first
