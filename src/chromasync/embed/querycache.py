"""A bounded, thread-safe LRU of query vectors around an embedder (`QueryCache`).

Design notes: docs/internals.md, `embed/querycache.py`.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from typing import Any

from . import Embedder

#: Distinct queries remembered: 256 vectors of 768 dimensions are about 1.5 MiB.
DEFAULT_MAX_ENTRIES = 256


class _Inner:
    """An attribute of the cache read from (and written to) the embedder it wraps."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.attr = name

    def __get__(self, cache: Any, owner: type | None = None) -> Any:
        return self if cache is None else getattr(cache.inner, self.attr)

    def __set__(self, cache: Any, value: Any) -> None:
        setattr(cache.inner, self.attr, value)


class QueryCache(Embedder):
    """`inner` with `embed_query` answered from an LRU of its last answers."""

    def __init__(self, inner: Embedder, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.inner = inner
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], array[float]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    # -- the Embedder protocol, delegated ------------------------------------------------------

    name = _Inner()
    max_tokens = _Inner()
    batch_size = _Inner()
    model_id = _Inner()
    dimension = _Inner()
    tokenizer_path = _Inner()
    embeds_in_store = _Inner()
    uses_local_cores = _Inner()
    embed_documents = _Inner()
    prefetch = _Inner()
    follow = _Inner()

    def embed_query(self, text: str) -> list[float]:
        key = (self.inner.model_id, text)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return found.tolist()
            self.misses += 1
        # The model runs outside the lock: two threads missing on one query both embed it
        # (the same vector), rather than every other query waiting on this one.
        vector = array("d", self.inner.embed_query(text))
        with self._lock:
            self._entries[key] = vector
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return vector.tolist()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __bool__(self) -> bool:
        """True even when empty: a cache is an embedder (`embedder or ...` keeps it)."""
        return True

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __getattr__(self, attr: str) -> Any:
        # Only called for attributes neither this class nor `Embedder` has (a provider's
        # own, such as the local one's `variant`).
        if attr == "inner":  # not set yet (copy, unpickling): no recursion
            raise AttributeError(attr)
        return getattr(self.inner, attr)


__all__ = ["DEFAULT_MAX_ENTRIES", "QueryCache"]
