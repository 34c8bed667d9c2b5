"""A LlamaIndex vector store on folio (`pip install folio-store[llama-index]`).

Each node is stored as a folio document (id: the node id) that the store chunks and embeds
with its own embedder, so queries go by text (`is_embedding_query = False`); a query that
brings only an embedding searches by that vector. A node's `acl` metadata (a list of
principals) becomes the document's ACL, and queries pass principals through to folio's
ACL-filtered search, returning the small-to-big units as the nodes.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Union

import numpy as np
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode, MetadataMode, TextNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    VectorStoreQuery,
    VectorStoreQueryResult,
)

from ._folio import Store

REF_DOC_ID = "ref_doc_id"


class FolioVectorStore(BasePydanticVectorStore):
    """LlamaIndex vector store over an open `folio.Store`.

    `principals` are who queries by default; `query(..., principals=[...])` replaces them.
    `delete(ref_doc_id)` reads every stored document's metadata to find its nodes.
    """

    stores_text: bool = True
    is_embedding_query: bool = False
    principals: List[str] = []
    expand: Union[str, int] = "parent"
    target: Optional[str] = None
    _store: Store = PrivateAttr()

    def __init__(self, store: Store, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._store = store

    @property
    def client(self) -> Store:
        return self._store

    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> List[str]:
        """Upserts the nodes in one atomic commit; returns their ids."""
        with self._store.batch() as batch:
            for node in nodes:
                metadata = dict(node.metadata)
                acl = metadata.pop("acl", None) or []
                if node.ref_doc_id is not None:
                    metadata[REF_DOC_ID] = node.ref_doc_id
                batch.upsert(
                    node.node_id,
                    node.get_content(metadata_mode=MetadataMode.NONE),
                    acl=list(acl),
                    metadata=metadata,
                )
        return [node.node_id for node in nodes]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Deletes every node of source document `ref_doc_id` in one commit."""
        doomed = [
            doc_id
            for doc_id in self._store.document_ids()
            if (self._store.document(doc_id) or {}).get("metadata", {}).get(REF_DOC_ID) == ref_doc_id
        ]
        self.delete_nodes(doomed)

    def delete_nodes(self, node_ids: Optional[List[str]] = None, filters: Any = None, **kwargs: Any) -> None:
        """Deletes the nodes `node_ids` in one commit."""
        if filters is not None:
            raise NotImplementedError("folio deletes nodes by id")
        with self._store.batch() as batch:
            for node_id in node_ids or []:
                batch.delete(node_id)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The `similarity_top_k` best units the principals may see."""
        if query.filters is not None:
            raise NotImplementedError("folio filters by principals, not metadata filters")
        if query.query_str is not None:
            q: Any = query.query_str
        elif query.query_embedding is not None:
            q = np.asarray(query.query_embedding, dtype=np.float32)
        else:
            raise ValueError("a query needs query_str or query_embedding")
        principals = kwargs.pop("principals", self.principals)
        result = self._store.search(
            q,
            k=query.similarity_top_k,
            principals=list(principals),
            expand=self.expand,
            target=self.target,
            **kwargs,
        )
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
        return VectorStoreQueryResult(
            nodes=nodes,
            similarities=[hit.score for hit in result],
            ids=[hit.doc_id for hit in result],
        )
