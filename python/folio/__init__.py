"""folio: an embedded vector store with structure-aware chunking, ACL-exact filtered search
and versioned indexes, in one file.

    import folio
    with folio.Store.open("kb.folio") as store:
        with store.batch() as b:
            b.upsert("runbook", text, format="markdown", acl=["engineering"])
        for hit in store.search("how do I roll back", k=5, principals=["engineering"]):
            print(hit.score, hit.section_path, hit.text)

Every search names the index version that answered (`hit.index`, `hit.version`), returns
`min(k, visible)` units and never a document the principals may not see.
"""

from ._folio import (
    Batch,
    Conflict,
    EmbedError,
    Error,
    Hit,
    InvalidArgument,
    LockedError,
    NotFound,
    ReadOnlyError,
    Reranker,
    SearchResult,
    Span,
    Store,
    StoreError,
    __version__,
    eval,
)

__all__ = [
    "Batch",
    "Conflict",
    "EmbedError",
    "Error",
    "Hit",
    "InvalidArgument",
    "LockedError",
    "NotFound",
    "ReadOnlyError",
    "Reranker",
    "SearchResult",
    "Span",
    "Store",
    "StoreError",
    "__version__",
    "eval",
]
