"""A LlamaIndex vector store on folio (`pip install folio-store[llama-index]`).

By default it behaves as LlamaIndex's own vector stores do: each node is stored as it is,
one chunk under the node's id, with the node's own embedding (LlamaIndex embeds nodes and
queries; `is_embedding_query`), in an index of its own (`index`, "llama_index" by default,
made on first use with the embeddings' dimension: folio's `vectors:DIM` embedder). Queries
return `similarity_top_k` nodes, each the node that was added (id, text, metadata,
relationships). A node's `acl` metadata (a list of principals) also becomes who may see it,
and queries go through folio's ACL-filtered search: `principals` (or a query's
`principals=`) say who asks. `MetadataFilters` become folio filters.

`chunking=True` uses folio's own chunking and small-to-big units instead: each node is a
folio document that the store chunks and embeds with its own embedder, so queries go by text.

A query's `mode` picks folio's ranking: `DEFAULT` dense, `TEXT_SEARCH` and `SPARSE` BM25
over the texts ("lexical"), `HYBRID` both fused by folio's weighted sum, the query's `alpha`
(1 all vector, 0 all words) as the dense weight when given. A query with both its text and
its embedding is searched as both, so every mode works on LlamaIndex's own vectors.
`rerank` (a `folio.Reranker` or a spec) reorders the best units; `search_options` holds any
other `Store.search` setting.

Similarities are relevances in [0, 1]: in dense mode `(1 + cosine) / 2`, the cosine of the
query with the node's embedding (or, with `chunking=True`, with the best child's of the
store's embedder); in the other modes the fused score (in [0, 1] for the weighted sum), BM25
or the reranker's score, mapped into [0, 1] by `x / (1 + |x|) / 2 + 0.5`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode, MetadataMode, TextNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

from ._adapter import compare, exists, literal, member, relevance, typed_metadata
from ._folio import Store

REF_DOC_ID = "ref_doc_id"


class FolioVectorStore(BasePydanticVectorStore):
    """LlamaIndex vector store over an open `folio.Store` (see the module's notes).

    `principals` are who queries by default; `query(..., principals=[...])` replaces them.
    """

    stores_text: bool = True
    is_embedding_query: bool = True
    index: str = "llama_index"
    principals: List[str] = []
    chunking: bool = False
    expand: Union[str, int] = "parent"
    search_options: Dict[str, Any] = {}
    _store: Store = PrivateAttr()
    _rerank: Any = PrivateAttr(default=None)

    def __init__(self, store: Store, *, rerank: Any = None, **kwargs: Any) -> None:
        if kwargs.get("chunking"):
            kwargs.setdefault("index", "default")
            kwargs.setdefault("is_embedding_query", False)
        super().__init__(**kwargs)
        self._store = store
        self._rerank = rerank

    @property
    def client(self) -> Store:
        return self._store

    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> List[str]:
        """Adds (or replaces, by id) the nodes in one atomic commit; returns their ids."""
        if not nodes:
            return []
        vectors = None
        if not self.chunking:
            missing = [n.node_id for n in nodes if n.embedding is None]
            if missing:
                raise ValueError(f"nodes without an embedding: {missing[:5]} (give the index an embed_model)")
            vectors = np.asarray([n.embedding for n in nodes], dtype=np.float32)
            self._ensure_index(vectors.shape[1])
        with self._store.batch() as batch:
            for n, node in enumerate(nodes):
                metadata = dict(node.metadata)
                acl = metadata.get("acl")
                if self.chunking:
                    stored = typed_metadata(metadata)
                    if node.ref_doc_id is not None:
                        stored[REF_DOC_ID] = node.ref_doc_id
                else:
                    stored = typed_metadata(node_to_metadata_dict(node, remove_text=True, flat_metadata=False))
                batch.upsert(
                    node.node_id,
                    node.get_content(metadata_mode=MetadataMode.NONE),
                    acl=None if acl is None else list(acl),
                    metadata=stored,
                    vectors=None if vectors is None else {self.index: vectors[n : n + 1]},
                    whole=not self.chunking,
                )
        return [node.node_id for node in nodes]

    def _ensure_index(self, dimension: int) -> None:
        if self.index not in self._store.index_names():
            self._store.create_index(self.index, embedder=f"vectors:{dimension}")

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Deletes every node of source document `ref_doc_id` in one commit."""
        doomed = [
            doc_id
            for doc_id in self._store.document_ids()
            if (self._store.document(doc_id) or {}).get("metadata", {}).get(REF_DOC_ID) == ref_doc_id
        ]
        self.delete_nodes(doomed)

    def delete_nodes(
        self, node_ids: Optional[List[str]] = None, filters: Optional[MetadataFilters] = None, **kwargs: Any
    ) -> None:
        """Deletes the nodes `node_ids` (those `filters` match, with `filters`) in one commit;
        ids not in the store are skipped."""
        stored = set(self._store.document_ids())
        doomed = [i for i in dict.fromkeys(node_ids or []) if i in stored]
        if filters is not None:
            doomed += [node.node_id for node in self.get_nodes(filters=filters) if node.node_id not in doomed]
        if doomed:
            with self._store.batch() as batch:
                for node_id in doomed:
                    batch.delete(node_id)

    def clear(self) -> None:
        """Deletes every node."""
        self.delete_nodes(self._store.document_ids())

    def get_nodes(
        self, node_ids: Optional[List[str]] = None, filters: Optional[MetadataFilters] = None, **kwargs: Any
    ) -> List[BaseNode]:
        """The stored nodes `node_ids` (every node `filters` matches, with `filters`)."""
        if filters is not None:
            raise ValueError("folio reads nodes by id; filters apply to queries")
        nodes = []
        for node_id in node_ids or []:
            stored = self._store.document(node_id)
            if stored is not None:
                nodes.append(self._node(node_id, stored["text"], stored["metadata"]))
        return nodes

    def _node(self, node_id: str, text: str, metadata: dict) -> BaseNode:
        if "_node_content" in metadata:
            node = metadata_dict_to_node(metadata, text=text)
            node.embedding = None
            return node
        return TextNode(id_=node_id, text=text, metadata=metadata)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The `similarity_top_k` best nodes the principals may see that the query's filters
        (and `doc_ids` / `node_ids`) match."""
        options: Dict[str, Any] = {"rerank": self._rerank, **self.search_options, **_mode_options(query)}
        if query.query_str is not None:
            q: Any = query.query_str
            if query.query_embedding is not None and not self.chunking:
                options["query_vector"] = np.asarray(query.query_embedding, dtype=np.float32)
        elif query.query_embedding is not None:
            q = np.asarray(query.query_embedding, dtype=np.float32)
        else:
            raise ValueError("a query needs query_str or query_embedding")
        if not self.chunking and self.index not in self._store.index_names():
            return VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
        tests = []
        if query.filters is not None:
            tests.append(to_folio_filter(query.filters))
        if query.node_ids:
            tests.append("doc_id in [" + ", ".join(literal(i) for i in query.node_ids) + "]")
        if query.doc_ids:
            tests.append(member(REF_DOC_ID, list(query.doc_ids)))
        principals = kwargs.pop("principals", self.principals)
        options.update(kwargs)
        result = self._store.search(
            q,
            k=query.similarity_top_k,
            principals=list(principals),
            expand=self.expand,
            target=self.index,
            dedup=options.pop("dedup", None),
            filter=" and ".join(f"({t})" for t in tests) or None,
            **options,
        )
        if self.chunking:
            nodes = [
                TextNode(
                    id_=hit.doc_id,
                    text=hit.text,
                    metadata={
                        "parent_id": hit.parent_id,
                        "section_path": hit.section_path,
                        "index": hit.index,
                        "version": hit.version,
                    },
                )
                for hit in result
            ]
        else:
            nodes = [self._node(hit.doc_id, hit.text, hit.metadata) for hit in result]
        return VectorStoreQueryResult(
            nodes=nodes,
            similarities=[_similarity(result.mode, result.reranker, hit.score) for hit in result],
            ids=[hit.doc_id for hit in result],
        )


def _mode_options(query: VectorStoreQuery) -> Dict[str, Any]:
    """The search settings of a query's mode (see the module's notes)."""
    if query.mode == VectorStoreQueryMode.DEFAULT:
        return {}
    if query.mode in (VectorStoreQueryMode.TEXT_SEARCH, VectorStoreQueryMode.SPARSE):
        return {"mode": "lexical"}
    if query.mode == VectorStoreQueryMode.HYBRID:
        if query.alpha is None:
            return {"mode": "hybrid"}
        return {"mode": "hybrid", "fusion": "weighted", "dense_weight": float(query.alpha)}
    raise ValueError(f"folio answers the default, text_search, sparse and hybrid modes, not {query.mode.value}")


def _similarity(mode: str, reranker: Optional[str], score: float) -> float:
    """A hit's score as a relevance in [0, 1]: dense cosines as `(1 + cosine) / 2`, the
    weighted fusion's as they are, others (RRF, BM25, a reranker's) squashed."""
    if reranker is None and mode == "dense":
        return relevance(score)
    if reranker is None and mode == "hybrid" and 0.0 <= score <= 1.0:
        return score
    return score / (1.0 + abs(score)) / 2.0 + 0.5


_OPERATORS = {
    FilterOperator.EQ: "=",
    FilterOperator.NE: "!=",
    FilterOperator.GT: ">",
    FilterOperator.GTE: ">=",
    FilterOperator.LT: "<",
    FilterOperator.LTE: "<=",
}


def to_folio_filter(filters: MetadataFilters) -> str:
    """LlamaIndex `MetadataFilters` in folio's filter language: `==`, `!=`, `>`, `>=`, `<`,
    `<=`, `in`, `nin`, `any` and `contains` (an element of a list), `is_empty`, nested
    filters, and the conditions `and`, `or` and `not`."""
    parts = []
    for f in filters.filters:
        parts.append(to_folio_filter(f) if isinstance(f, MetadataFilters) else _test(f))
    if not parts:
        raise ValueError("empty MetadataFilters")
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.NOT:
        return "not (" + " and ".join(f"({p})" for p in parts) + ")"
    joiner = " or " if condition == FilterCondition.OR else " and "
    return joiner.join(f"({p})" for p in parts)


def _test(f: MetadataFilter) -> str:
    op = f.operator
    if op in _OPERATORS:
        return compare(f.key, _OPERATORS[op], f.value)
    if op in (FilterOperator.IN, FilterOperator.ANY):
        return member(f.key, f.value)
    if op == FilterOperator.NIN:
        return member(f.key, f.value, negated=True)
    if op == FilterOperator.CONTAINS:
        return compare(f.key, "=", f.value)
    if op == FilterOperator.IS_EMPTY:
        return exists(f.key, False)
    raise ValueError(f"folio has no filter for the operator {op.value!r}")
