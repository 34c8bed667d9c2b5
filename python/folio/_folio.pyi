"""Type stubs of folio's native module (python/src/*.rs)."""

import os
import pathlib
from types import TracebackType
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Type, Union

import numpy as np
import numpy.typing as npt

__version__: str

Json = Any
"""Plain data: dicts, lists, str, int, float, bool, None."""

MetadataValue = Union[str, int, float, bool, List[str]]
"""A metadata value: numbers come back as float, dates (YYYY-MM-DD or RFC 3339 text) as text."""
Vectors = Union[npt.NDArray[np.float32], Mapping[str, npt.NDArray[np.float32]]]

class Error(Exception):
    """Every error folio raises."""

class StoreError(Error):
    """The store file or its storage: not a store, a format this build cannot read, damage, a closed store."""

class LockedError(StoreError):
    """Another process has the store open for writing."""

class ReadOnlyError(StoreError):
    """A write on a store opened with read_only=True."""

class NotFound(Error):
    """No such store file, index, version, tag, alias, document or logged request."""

class InvalidArgument(Error, ValueError):
    """An argument folio refuses: a parameter out of range, a bad name, a document or vectors that cannot be stored."""

class Conflict(Error):
    """A name that is taken, or an index still in use by an alias."""

class EmbedError(Error):
    """The embedder failed, or the index's embedder is not registered."""

class Span:
    """A matching child chunk inside a returned unit."""

    chunk_id: str
    score: float
    start: int
    end: int

class Hit:
    """One returned reading unit, with the index version that answered."""

    score: float
    """The final ranking's score: the best child's, or the reranker's when one ran."""
    scores: Dict[str, float]
    """Each stage's score: "dense", "lexical", "fused", "rerank" (the stages that ran)."""
    text: str
    doc_id: str
    parent_id: str
    section_path: List[str]
    title: str
    source_uri: str
    start: int
    end: int
    tokens: int
    pages: Optional[Tuple[int, int]]
    """First and last page (from 1) of `text`, for a PDF document; None for other formats."""
    spans: List[Span]
    index: str
    version: int
    metadata: Dict[str, Json]

class Reranker:
    """A reranker started or loaded once from a spec ("bert:DIR", "onnx:MODEL.onnx@DIR",
    'cmd:"COMMAND"', "tei:URL", "cohere:MODEL@URL", "jina:MODEL@URL"), or a Python function
    as one (`Reranker.from_function(name, fn)`, fn(query, texts) -> one float per text)."""

    def __init__(self, spec: str) -> None: ...
    @staticmethod
    def from_function(name: str, function: Callable[[str, List[str]], Sequence[float]]) -> Reranker: ...
    @property
    def name(self) -> str: ...
    def score(self, query: str, texts: Sequence[str]) -> List[float]: ...

class SearchResult:
    """The hits of a search, best first; iterable, indexable and sized like a list."""

    hits: List[Hit]
    index: str
    version: int
    visible: int
    request_id: Optional[int]
    micros: int
    mode: str
    """How children were ranked: "dense", "lexical" or "hybrid"."""
    reranker: Optional[str]
    """The reranker that reordered the hits, when one did."""
    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> Hit: ...
    def __iter__(self) -> Iterator[Hit]: ...

class Batch:
    """Changes committed atomically; as a context manager it commits at the end of the block
    and discards everything when the block raises."""

    def upsert(
        self,
        doc_id: str,
        text: Union[str, bytes],
        *,
        format: str = "text",
        acl: Optional[Sequence[str]] = None,
        metadata: Optional[Mapping[str, MetadataValue]] = None,
        title: str = "",
        source_uri: str = "",
        vectors: Optional[Vectors] = None,
        whole: bool = False,
    ) -> None: ...
    def delete(self, doc_id: str) -> None: ...
    def set_acl(self, doc_id: str, acl: Sequence[str]) -> None: ...
    def commit(self) -> Dict[str, Json]: ...
    def rollback(self) -> None: ...
    def __len__(self) -> int: ...
    def __enter__(self) -> "Batch": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class Store:
    """An open folio store (one file)."""

    @staticmethod
    def open(
        path: Union[str, "os.PathLike[str]"],
        *,
        create: bool = True,
        read_only: bool = False,
        embedder: Optional[str] = None,
        log_requests: bool = False,
        wait: float = 10.0,
    ) -> "Store": ...
    @property
    def path(self) -> pathlib.Path: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Store": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...
    def batch(self) -> Batch: ...
    def upsert(
        self,
        doc_id: str,
        text: Union[str, bytes],
        *,
        format: str = "text",
        acl: Optional[Sequence[str]] = None,
        metadata: Optional[Mapping[str, MetadataValue]] = None,
        title: str = "",
        source_uri: str = "",
        vectors: Optional[Vectors] = None,
        whole: bool = False,
    ) -> Dict[str, Json]: ...
    def delete(self, doc_id: str) -> Dict[str, Json]: ...
    def set_acl(self, doc_id: str, acl: Sequence[str]) -> Dict[str, Json]: ...
    def plan(
        self, doc_id: str, text: Union[str, bytes], *, format: str = "text", index: str = "default"
    ) -> List[Dict[str, Json]]: ...
    def search(
        self,
        query: Union[str, npt.NDArray[np.float32]],
        *,
        k: int = 5,
        principals: Optional[Sequence[str]] = None,
        unrestricted: bool = False,
        expand: Optional[Union[str, int]] = None,
        token_budget: Optional[int] = None,
        budget_tokens: Optional[str] = None,
        target: Optional[str] = None,
        route_key: Optional[str] = None,
        ef: Optional[int] = None,
        dedup: Optional[float] = 0.9,
        filter: Optional[str] = None,
        query_vector: Optional[npt.NDArray[np.float32]] = None,
        mode: Optional[str] = None,
        fusion: Optional[str] = None,
        rrf_k: Optional[int] = None,
        dense_weight: Optional[float] = None,
        dense_depth: Optional[int] = None,
        lexical_depth: Optional[int] = None,
        rerank: Optional[Union[Reranker, str]] = None,
        rerank_top: Optional[int] = None,
        rerank_window: Optional[int] = None,
    ) -> SearchResult: ...
    def document_ids(self) -> List[str]: ...
    def document(self, doc_id: str) -> Optional[Dict[str, Json]]: ...
    def index_names(self) -> List[str]: ...
    def indexes(self) -> List[Dict[str, Json]]: ...
    def create_index(self, name: str, *, embedder: Optional[str] = None) -> int: ...
    def drop_index(self, name: str) -> None: ...
    def versions(self, index: str = "default") -> List[Dict[str, Json]]: ...
    def tag(self, index: str, version: int, tag: str) -> None: ...
    def remove_tag(self, index: str, tag: str) -> int: ...
    def set_alias(self, alias: str, routes: Union[str, Sequence[Tuple[str, int, int]]]) -> None: ...
    def remove_alias(self, alias: str) -> None: ...
    def aliases(self) -> List[Dict[str, Json]]: ...
    def route(self, alias: str, key: str) -> Dict[str, Json]: ...
    def rollback(self, target: str, version: int) -> Dict[str, Json]: ...
    def unpin(self, index: str) -> Optional[int]: ...
    def check(self) -> Dict[str, Json]: ...
    def log_entries(self) -> List[Dict[str, Json]]: ...
    def feedback(
        self, request_id: int, *, rating: Optional[str] = None, note: Optional[str] = None
    ) -> None: ...

EvalRow = Dict[str, Union[str, int, float, None]]
"""One row of `folio eval --csv`: `strategy`, `group`, `questions`, `hit_at_K`, `mrr`, `full`, ...;
the costs (`chunks_per_doc`, `index_bytes`, `vector_bytes`, `build_s`) are None in group rows."""

def eval(
    docs: Union[str, "os.PathLike[str]"],
    queries: Union[str, "os.PathLike[str]"],
    strategies: Sequence[str],
    *,
    k: Sequence[int] = (1, 3, 5),
    embedder: Optional[str] = None,
    token_budget: Optional[int] = None,
    budget_tokens: Optional[str] = None,
    store_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
    limit: Optional[int] = None,
) -> List[EvalRow]:
    """Builds each chunking strategy over the documents (JSON Lines), asks every question
    (JSON Lines with gold spans) and returns the rows `folio eval --csv` writes: per strategy
    a `group == "all"` row, then one per strategy and question group. Runs without the GIL."""
