"""A LangChain vector store on folio (`pip install folio-store[langchain]`).

Texts are chunked and embedded by the store (its own embedder), or, when an `Embeddings`
is given, embedded by it (each chunk's `embed_text` from `Store.plan`, and the query).
Searches pass principals through to folio's ACL-filtered search and return the
small-to-big units (parents, sections or windows) as the documents.
"""

from __future__ import annotations

import uuid
from typing import Any, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from ._folio import Store


class FolioVectorStore(VectorStore):
    """LangChain `VectorStore` over an open `folio.Store`.

    `principals` are who searches by default (public documents plus those shared with any
    of them); a search's `principals=` replaces them. `expand` and `target` are passed to
    `Store.search`.
    """

    def __init__(
        self,
        store: Store,
        *,
        embedding: Optional[Embeddings] = None,
        principals: Optional[Sequence[str]] = None,
        expand: Any = "parent",
        target: Optional[str] = None,
    ) -> None:
        self.store = store
        self._embedding = embedding
        self.principals = list(principals or [])
        self.expand = expand
        self.target = target

    @property
    def embeddings(self) -> Optional[Embeddings]:
        return self._embedding

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: Optional[List[dict]] = None,
        *,
        ids: Optional[List[str]] = None,
        acl: Optional[Sequence[str]] = None,
        acls: Optional[Sequence[Sequence[str]]] = None,
        format: str = "text",
        **kwargs: Any,
    ) -> List[str]:
        """Adds texts in one atomic commit; `acl` applies to every text, `acls` gives one
        ACL per text (none: public). Returns their ids (new UUIDs unless `ids` are given)."""
        texts = list(texts)
        ids = list(ids) if ids else [str(uuid.uuid4()) for _ in texts]
        with self.store.batch() as batch:
            for i, (doc_id, text) in enumerate(zip(ids, texts)):
                vectors = None
                if self._embedding is not None:
                    planned = self.store.plan(doc_id, text, format=format)
                    rows = self._embedding.embed_documents([c["embed_text"] for c in planned])
                    vectors = np.asarray(rows, dtype=np.float32)
                batch.upsert(
                    doc_id,
                    text,
                    format=format,
                    acl=list(acls[i]) if acls else list(acl or []),
                    metadata=dict(metadatas[i]) if metadatas else None,
                    vectors=vectors,
                )
        return ids

    def delete(self, ids: Optional[List[str]] = None, **kwargs: Any) -> Optional[bool]:
        """Deletes the documents `ids` in one commit (all of them or none)."""
        if not ids:
            return False
        with self.store.batch() as batch:
            for doc_id in ids:
                batch.delete(doc_id)
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> List[Document]:
        out = []
        for doc_id in ids:
            stored = self.store.document(doc_id)
            if stored is not None:
                out.append(
                    Document(id=doc_id, page_content=stored["text"], metadata=stored["metadata"])
                )
        return out

    def similarity_search_with_score(
        self,
        query: str,
        k: int = 4,
        *,
        principals: Optional[Sequence[str]] = None,
        **kwargs: Any,
    ) -> List[Tuple[Document, float]]:
        """The `k` best units the principals may see, with their scores (higher is closer)."""
        q: Any = query
        if self._embedding is not None:
            q = np.asarray(self._embedding.embed_query(query), dtype=np.float32)
        result = self.store.search(
            q,
            k=k,
            principals=list(self.principals if principals is None else principals),
            expand=self.expand,
            target=self.target,
            **kwargs,
        )
        out = []
        for hit in result:
            stored = self.store.document(hit.doc_id)
            metadata = dict(stored["metadata"]) if stored else {}
            metadata.update(
                doc_id=hit.doc_id,
                parent_id=hit.parent_id,
                section_path=hit.section_path,
                index=hit.index,
                version=hit.version,
            )
            out.append((Document(id=hit.doc_id, page_content=hit.text, metadata=metadata), hit.score))
        return out

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> List[Document]:
        return [doc for doc, _ in self.similarity_search_with_score(query, k, **kwargs)]

    @classmethod
    def from_texts(
        cls,
        texts: List[str],
        embedding: Optional[Embeddings] = None,
        metadatas: Optional[List[dict]] = None,
        *,
        ids: Optional[List[str]] = None,
        path: str = "langchain.folio",
        **kwargs: Any,
    ) -> "FolioVectorStore":
        """Opens (or creates) the store at `path` and adds `texts`."""
        store = cls(Store.open(path), embedding=embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store
