"""A LangChain vector store on folio (`pip install folio-store[langchain]`).

By default it behaves as LangChain's own vector stores do: each text is one chunk, embedded
by the given `Embeddings` as it is, and comes back as a `Document` with exactly the caller's
id and metadata. Its vectors live in an index of their own (`index`, "langchain" by
default), made on first use with the embedding's dimension (folio's `vectors:DIM`
embedder: the vectors are the application's). Searches go through folio's ACL-filtered
search: `principals` (or a search's `principals=`) say who asks, and a document added with
`acl=` is seen only by them.

`chunking=True` uses folio's own chunking and small-to-big retrieval instead: texts are cut
by the index's spec, each chunk embedded (by `embedding`, or the store's embedder without
one), and searches return parents, sections or windows (`expand`).

`mode` ranks by "dense" (the default), "lexical" (BM25 over the texts) or "hybrid" (both,
fused); `rerank` (a `folio.Reranker` or a spec) reorders the best units; `search_options`
holds any other `Store.search` setting (`fusion`, `dense_weight`, `rerank_top`, ...). A
search's own keyword arguments override all three. With an `embedding`, a text query is
searched as its text and its vector, so every mode works on the caller's vectors.

Scores: `similarity_search_with_score` gives the final ranking's score: in dense mode the
cosine similarity (-1 to 1), else the mode's or the reranker's (see `Hit.scores`); relevance
scores (`similarity_search_with_relevance_scores`, the `similarity_score_threshold`
retriever) are `(1 + cosine) / 2`, in [0, 1], and are meant for dense mode.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore
from langchain_core.vectorstores.utils import maximal_marginal_relevance

from ._adapter import compare, exists, member, open_store, relevance, typed_metadata
from ._folio import Store

# The caller's metadata, kept whole as JSON beside folio's typed (filterable) fields.
_METADATA = "_langchain_metadata"

class FolioVectorStore(VectorStore):
    """LangChain `VectorStore` over an open `folio.Store` (see the module's notes).

    `principals` are who searches by default (public documents plus those shared with any
    of them); `acl` is who may see the texts added (everyone when empty).
    """

    def __init__(
        self,
        store: Store,
        embedding: Optional[Embeddings] = None,
        *,
        index: Optional[str] = None,
        principals: Optional[Sequence[str]] = None,
        acl: Optional[Sequence[str]] = None,
        chunking: bool = False,
        expand: Any = "parent",
        folio_fields: bool = False,
        mode: Optional[str] = None,
        rerank: Any = None,
        search_options: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.store = store
        self._embedding = embedding
        self.index = index or ("langchain" if embedding is not None and not chunking else "default")
        self.principals = list(principals or [])
        self.acl = list(acl or [])
        self.chunking = chunking
        self.expand = expand
        self.folio_fields = folio_fields
        self.search_options: Dict[str, Any] = {"mode": mode, "rerank": rerank, **(search_options or {})}

    @property
    def embeddings(self) -> Optional[Embeddings]:
        return self._embedding

    def _ensure_index(self) -> None:
        """Makes the index of the embedding's vectors on first use."""
        if self.index in self.store.index_names():
            return
        if self._embedding is None:
            raise ValueError(f"the store has no index `{self.index}`, and no embedding was given to make one")
        dimension = len(self._embedding.embed_query("dimension"))
        self.store.create_index(self.index, embedder=f"vectors:{dimension}")

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: Optional[List[dict]] = None,
        *,
        ids: Optional[List[Optional[str]]] = None,
        acl: Optional[Sequence[str]] = None,
        acls: Optional[Sequence[Sequence[str]]] = None,
        format: str = "text",
        **kwargs: Any,
    ) -> List[str]:
        """Adds (or replaces, by id) texts in one atomic commit. `acl` applies to every text
        (the store's `acl` by default), `acls` gives one per text; with neither, a new text
        is public and a replaced one keeps who may see it. Returns their ids: the given
        ones, new UUIDs for texts without."""
        texts = list(texts)
        given = list(ids) if ids else [None] * len(texts)
        if len(given) != len(texts) or (metadatas is not None and len(metadatas) != len(texts)):
            raise ValueError("texts, ids and metadatas must have the same length")
        ids = [i if i else str(uuid.uuid4()) for i in given]
        self._ensure_index()
        rows = None
        if self._embedding is not None and not self.chunking:
            rows = np.asarray(self._embedding.embed_documents(texts), dtype=np.float32)
        with self.store.batch() as batch:
            for n, (doc_id, text) in enumerate(zip(ids, texts)):
                metadata = dict(metadatas[n]) if metadatas else {}
                vectors = None
                if rows is not None:
                    vectors = {self.index: rows[n : n + 1]}
                elif self._embedding is not None:
                    planned = self.store.plan(doc_id, text, format=format, index=self.index)
                    embedded = self._embedding.embed_documents([c["embed_text"] for c in planned])
                    vectors = {self.index: np.asarray(embedded, dtype=np.float32)}
                batch.upsert(
                    doc_id,
                    text,
                    format=format,
                    acl=self._acl_of(n, acl, acls),
                    metadata=_stored_metadata(metadata),
                    vectors=vectors,
                    whole=not self.chunking,
                )
        return ids

    def _acl_of(
        self, n: int, acl: Optional[Sequence[str]], acls: Optional[Sequence[Sequence[str]]]
    ) -> Optional[List[str]]:
        """Text `n`'s ACL: its own in `acls`, else `acl`, else the store's; None when none
        is given, so a replaced document keeps its stored ACL."""
        if acls:
            return list(acls[n])
        if acl is not None:
            return list(acl)
        return list(self.acl) or None

    def delete(self, ids: Optional[List[str]] = None, **kwargs: Any) -> Optional[bool]:
        """Deletes the documents `ids` (every document when None) in one commit; ids not in
        the store are skipped."""
        stored = set(self.store.document_ids())
        doomed = sorted(stored) if ids is None else [i for i in dict.fromkeys(ids) if i in stored]
        if doomed:
            with self.store.batch() as batch:
                for doc_id in doomed:
                    batch.delete(doc_id)
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> List[Document]:
        out = []
        for doc_id in ids:
            stored = self.store.document(doc_id)
            if stored is not None:
                out.append(Document(id=doc_id, page_content=stored["text"], metadata=_caller_metadata(stored["metadata"])))
        return out

    def _search(
        self,
        query: Any,
        k: int,
        filter: Optional[Any],
        principals: Optional[Sequence[str]],
        **kwargs: Any,
    ) -> List[Tuple[Document, float]]:
        self._ensure_index()
        if k <= 0:
            return []
        options = {**self.search_options, **kwargs}
        result = self.store.search(
            query,
            k=k,
            principals=list(self.principals if principals is None else principals),
            expand=self.expand,
            target=self.index,
            dedup=options.pop("dedup", None),
            filter=to_folio_filter(filter),
            **options,
        )
        out = []
        for hit in result:
            metadata = _caller_metadata(hit.metadata)
            if self.folio_fields:
                metadata.update(
                    doc_id=hit.doc_id,
                    parent_id=hit.parent_id,
                    section_path=hit.section_path,
                    index=hit.index,
                    version=hit.version,
                )
            out.append((Document(id=hit.doc_id, page_content=hit.text, metadata=metadata), hit.score))
        return out

    def _query_vector(self, query: str) -> Dict[str, Any]:
        """The text query's vector by the caller's embedding, when there is one."""
        if self._embedding is None:
            return {}
        return {"query_vector": np.asarray(self._embedding.embed_query(query), dtype=np.float32)}

    def similarity_search_with_score(
        self,
        query: str,
        k: int = 4,
        filter: Optional[Any] = None,
        *,
        principals: Optional[Sequence[str]] = None,
        **kwargs: Any,
    ) -> List[Tuple[Document, float]]:
        """The `k` best documents the principals may see that `filter` matches (a LangChain
        dict filter, or a folio filter string), with their cosine similarity."""
        return self._search(query, k, filter, principals, **self._query_vector(query), **kwargs)

    def similarity_search(self, query: str, k: int = 4, filter: Optional[Any] = None, **kwargs: Any) -> List[Document]:
        return [doc for doc, _ in self.similarity_search_with_score(query, k, filter, **kwargs)]

    def similarity_search_by_vector(
        self, embedding: List[float], k: int = 4, filter: Optional[Any] = None, **kwargs: Any
    ) -> List[Document]:
        principals = kwargs.pop("principals", None)
        vector = np.asarray(embedding, dtype=np.float32)
        return [doc for doc, _ in self._search(vector, k, filter, principals, **kwargs)]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return relevance

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: Optional[Any] = None,
        **kwargs: Any,
    ) -> List[Document]:
        if self._embedding is None:
            raise ValueError("max marginal relevance needs an embedding (FolioVectorStore(store, embedding))")
        vector = self._embedding.embed_query(query)
        return self.max_marginal_relevance_search_by_vector(vector, k, fetch_k, lambda_mult, filter, **kwargs)

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: List[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: Optional[Any] = None,
        **kwargs: Any,
    ) -> List[Document]:
        """The `fetch_k` best documents, then `k` of them picked by maximal marginal
        relevance over their texts' embeddings."""
        if self._embedding is None:
            raise ValueError("max marginal relevance needs an embedding (FolioVectorStore(store, embedding))")
        principals = kwargs.pop("principals", None)
        query = np.asarray(embedding, dtype=np.float32)
        candidates = [doc for doc, _ in self._search(query, max(fetch_k, k), filter, principals, **kwargs)]
        if not candidates:
            return []
        vectors = self._embedding.embed_documents([d.page_content for d in candidates])
        picked = maximal_marginal_relevance(query, vectors, lambda_mult=lambda_mult, k=k)
        return [candidates[i] for i in picked]

    @classmethod
    def from_texts(
        cls,
        texts: List[str],
        embedding: Optional[Embeddings] = None,
        metadatas: Optional[List[dict]] = None,
        *,
        ids: Optional[List[str]] = None,
        path: "str | os.PathLike[str]" = "langchain.folio",
        **kwargs: Any,
    ) -> "FolioVectorStore":
        """Opens (or creates) the store at `path` (the handle this process has open there,
        if any: `open_store`) and adds `texts`."""
        store = cls(open_store(path), embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store


def _stored_metadata(metadata: Dict[str, Any]) -> Dict[str, Any]:
    """The caller's metadata as folio keeps it: the values its filters can test, and the
    whole dict as JSON."""
    stored = typed_metadata(metadata)
    stored[_METADATA] = json.dumps(metadata, default=str)
    return stored


def _caller_metadata(stored: Dict[str, Any]) -> Dict[str, Any]:
    """The metadata as the caller gave it (folio's typed fields for documents stored
    without it)."""
    kept = stored.get(_METADATA)
    if isinstance(kept, str):
        return json.loads(kept)
    return dict(stored)


_OPERATORS = {"$eq": "=", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def to_folio_filter(filter: Optional[Any]) -> Optional[str]:
    """A LangChain dict filter in folio's filter language (a string is passed as it is):
    `{"key": value}`, `{"key": {"$eq" | "$ne" | "$gt" | "$gte" | "$lt" | "$lte" | "$in" |
    "$nin" | "$exists": ...}}`, `{"$and": [...]}`, `{"$or": [...]}`, `{"$not": {...}}`;
    several keys in one dict must all hold."""
    if filter is None or isinstance(filter, str):
        return filter
    if not isinstance(filter, dict):
        raise ValueError(f"a filter is a dict or a folio filter string, not {type(filter).__name__}")
    if not filter:
        return None
    return _expression(filter)


def _expression(filter: Dict[str, Any]) -> str:
    parts = []
    for key, value in filter.items():
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                raise ValueError(f"{key} takes a non-empty list of filters")
            joiner = " and " if key == "$and" else " or "
            parts.append("(" + joiner.join(_expression(f) for f in value) + ")")
        elif key == "$not":
            parts.append(f"not ({_expression(value)})")
        elif key.startswith("$"):
            raise ValueError(f"unknown filter operator {key}")
        elif isinstance(value, dict):
            parts.extend(_field_test(key, op, operand) for op, operand in value.items())
        else:
            parts.append(_field_test(key, "$eq", value))
    return " and ".join(parts)


def _field_test(key: str, op: str, operand: Any) -> str:
    if op in _OPERATORS:
        return compare(key, _OPERATORS[op], operand)
    if op in ("$in", "$nin"):
        return member(key, operand, negated=op == "$nin")
    if op == "$exists":
        return exists(key, bool(operand))
    raise ValueError(f"unknown filter operator {op}")
