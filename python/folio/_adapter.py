"""What the LangChain and LlamaIndex adapters share, and import neither framework: one
store handle per file and process, the metadata folio's filters can test, and the pieces of
folio's filter language their filters are written in."""

from __future__ import annotations

import math
import os
import threading
import weakref
from typing import Any, Dict, Sequence

from ._folio import Store

_open_lock = threading.Lock()
_open_stores: "weakref.WeakValueDictionary[str, Store]" = weakref.WeakValueDictionary()


def open_store(path: "str | os.PathLike[str]", **options: Any) -> Store:
    """`Store.open(path, **options)`, or the store this process already has open at `path`
    (one handle per file and process: a second `Store.open` of the same file would wait for
    the first's writer lock). The options of a later call are not applied to a store that
    is already open."""
    key = os.path.realpath(os.fspath(path))
    with _open_lock:
        store = _open_stores.get(key)
        if store is None or store.closed:
            store = Store.open(path, **options)
            _open_stores[key] = store
        return store


def relevance(cosine: float) -> float:
    """A cosine similarity (-1 to 1) as a relevance in [0, 1], the range both frameworks
    expect of a store's scores."""
    return (1.0 + cosine) / 2.0


def typed_metadata(metadata: Dict[str, Any]) -> Dict[str, Any]:
    """The values of `metadata` folio keeps typed, so filters can test them: strings,
    finite numbers, booleans and lists of strings (others are left out)."""
    typed: Dict[str, Any] = {}
    for key, value in metadata.items():
        if isinstance(value, (bool, str)):
            typed[key] = value
        elif isinstance(value, (int, float)) and math.isfinite(value):
            typed[key] = value
        elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            typed[key] = list(value)
    return typed


def field(key: str) -> str:
    """Metadata key `key` in folio's filter language."""
    return "metadata." + literal(key)


def compare(key: str, operator: str, value: Any) -> str:
    """`metadata."key" OP value` (`=`, `!=`, `<`, `<=`, `>`, `>=`)."""
    return f"{field(key)} {operator} {literal(value)}"


def member(key: str, values: Sequence[Any], negated: bool = False) -> str:
    """The key's value (or one element of a list) is one of `values` (or none of them)."""
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError("a membership test takes a non-empty list")
    test = f"{field(key)} in [{', '.join(literal(v) for v in values)}]"
    return f"not ({test})" if negated else test


def exists(key: str, present: bool = True) -> str:
    """The key has a value (or has none)."""
    return f"{field(key)} exists" if present else f"not ({field(key)} exists)"


def literal(value: Any) -> str:
    """A string, number or boolean as a literal of folio's filter language."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"a filter cannot compare with {value}")
        return repr(value)
    if isinstance(value, str):
        escaped = []
        for ch in value:
            if ch in "\"\\":
                escaped.append("\\" + ch)
            elif ch == "\n":
                escaped.append("\\n")
            elif ch == "\r":
                escaped.append("\\r")
            elif ch == "\t":
                escaped.append("\\t")
            elif ord(ch) < 0x20:
                escaped.append("\\u{%x}" % ord(ch))
            else:
                escaped.append(ch)
        return '"' + "".join(escaped) + '"'
    raise ValueError(f"a filter compares with strings, numbers and booleans, not {type(value).__name__}")
