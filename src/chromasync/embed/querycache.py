"""A bounded, thread-safe LRU of query vectors around an embedder (`QueryCache`).

Design notes: docs/internals.md, `embed/querycache.py`.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from . import Embedder

#: Distinct queries remembered: 256 vectors of 768 dimensions are about 1.5 MiB.
DEFAULT_MAX_ENTRIES = 256


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

    @property
    def name(self) -> str:
        return self.inner.name

    @name.setter
    def name(self, value: str) -> None:
        self.inner.name = value

    @property
    def max_tokens(self) -> int:
        return self.inner.max_tokens

    @max_tokens.setter
    def max_tokens(self, value: int) -> None:
        self.inner.max_tokens = value

    @property
    def batch_size(self) -> int:
        return self.inner.batch_size

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        self.inner.batch_size = value

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def tokenizer_path(self) -> str | None:
        return self.inner.tokenizer_path

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)

    @property
    def embeds_in_store(self) -> bool:
        return self.inner.embeds_in_store

    @property
    def uses_local_cores(self) -> bool:
        return self.inner.uses_local_cores

    def prefetch(self) -> None:
        self.inner.prefetch()

    def follow(self, stored_model_id: str | None) -> bool:
        return self.inner.follow(stored_model_id)

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
