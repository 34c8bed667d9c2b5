"""The LlamaIndex adapter as LlamaIndex's users write it: `VectorStoreIndex.from_documents`
and `from_vector_store` over it with the nodes' own embeddings, `similarity_top_k` nodes,
`MetadataFilters`, deletes by source document and by node id, and principals."""

import hashlib

import numpy as np
import pytest
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import MetadataMode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

import folio
from folio.llama_index import FolioVectorStore


class WordEmbedding(BaseEmbedding):
    """A deterministic bag-of-words embedding (each word hashed to a dimension), so a query
    made of a text's words finds that text first."""

    dimension: int = 64

    def _vector(self, text: str):
        v = np.zeros(self.dimension, dtype=np.float32)
        for word in text.lower().split():
            v[int(hashlib.sha256(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
        return (v / (np.linalg.norm(v) or 1.0)).tolist()

    def _get_query_embedding(self, query: str):
        return self._vector(query)

    def _get_text_embedding(self, text: str):
        return self._vector(text)

    async def _aget_query_embedding(self, query: str):
        return self._vector(query)


DOCS = [
    Document(text="apples are red and crisp", doc_id="apple", metadata={"kind": "fruit", "price": 3}),
    Document(text="bananas are yellow and sweet", doc_id="banana", metadata={"kind": "fruit", "price": 1}),
    Document(text="carrots are orange roots", doc_id="carrot", metadata={"kind": "vegetable", "price": 2}),
    Document(text="lemons are yellow and sour", doc_id="lemon", metadata={"kind": "fruit", "price": 4, "acl": ["chef"]}),
]


@pytest.fixture
def index(tmp_path):
    store = folio.Store.open(tmp_path / "li.folio")
    vs = FolioVectorStore(store)
    context = StorageContext.from_defaults(vector_store=vs)
    built = VectorStoreIndex.from_documents(
        DOCS, storage_context=context, embed_model=WordEmbedding(), transformations=[SentenceSplitter()]
    )
    yield built, vs, store
    store.close()


def texts(nodes):
    return [n.node.get_content() for n in nodes]


def test_from_documents_returns_top_k_nodes_by_their_embeddings(index):
    built, vs, store = index
    retriever = built.as_retriever(similarity_top_k=3)
    found = retriever.retrieve("bananas are yellow and sweet")
    assert len(found) == 3 and texts(found)[0] == "bananas are yellow and sweet"
    # The score is the relevance (1 + cosine) / 2 in [0, 1] of the query and the node's own
    # embedding, which LlamaIndex made from its text with its metadata.
    embedded = WordEmbedding()._vector(found[0].node.get_content(metadata_mode=MetadataMode.EMBED))
    query = WordEmbedding()._vector("bananas are yellow and sweet")
    assert found[0].score == pytest.approx((1.0 + float(np.dot(embedded, query))) / 2.0, abs=1e-5)
    assert all(0.0 <= hit.score <= 1.0 for hit in built.as_retriever(similarity_top_k=10).retrieve("chef"))
    assert found[0].node.metadata == {"kind": "fruit", "price": 1}
    assert found[0].node.ref_doc_id == "banana"
    # The nodes' own vectors are in the store: a search by the query's vector finds the same.
    stored = store.search(np.asarray(embedded, dtype=np.float32), k=1, target="llama_index")
    assert stored[0].text == "bananas are yellow and sweet" and stored[0].score == pytest.approx(1.0, abs=1e-5)
    # lemon is the chef's: a retriever as the chef sees four, others three.
    assert len(built.as_retriever(similarity_top_k=10).retrieve("yellow")) == 3
    chef = vs.query(VectorStoreQuery(query_embedding=WordEmbedding()._vector("yellow"), similarity_top_k=10),
                    principals=["chef"])
    assert len(chef.nodes) == 4


def test_from_vector_store_and_metadata_filters(index):
    _, vs, _ = index
    again = VectorStoreIndex.from_vector_store(vs, embed_model=WordEmbedding())
    fruit = MetadataFilters(filters=[MetadataFilter(key="kind", value="fruit")])
    found = again.as_retriever(similarity_top_k=5, filters=fruit).retrieve("orange roots")
    assert sorted(texts(found)) == ["apples are red and crisp", "bananas are yellow and sweet"]
    cheap_or_veg = MetadataFilters(
        filters=[
            MetadataFilter(key="price", value=2, operator=FilterOperator.LT),
            MetadataFilter(key="kind", value=["vegetable"], operator=FilterOperator.IN),
        ],
        condition=FilterCondition.OR,
    )
    found = again.as_retriever(similarity_top_k=5, filters=cheap_or_veg).retrieve("roots")
    assert sorted(texts(found)) == ["bananas are yellow and sweet", "carrots are orange roots"]
    with pytest.raises(ValueError):
        again.as_retriever(
            filters=MetadataFilters(filters=[MetadataFilter(key="kind", value="f", operator=FilterOperator.TEXT_MATCH)])
        ).retrieve("x")


def test_deletes_by_source_document_and_node_id(index):
    built, vs, _ = index
    built.delete_ref_doc("apple")
    assert "apples are red and crisp" not in texts(built.as_retriever(similarity_top_k=5).retrieve("apples red"))
    carrot = built.as_retriever(similarity_top_k=1).retrieve("carrots are orange roots")[0].node.node_id
    vs.delete_nodes([carrot, "no-such-node"])
    assert sorted(texts(built.as_retriever(similarity_top_k=5).retrieve("roots"))) == ["bananas are yellow and sweet"]
