"""`embed.querycache.QueryCache`: a bounded, thread-safe LRU of query vectors."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from chromasync.embed import Embedder
from chromasync.embed.hashing import HashEmbedder
from chromasync.embed.querycache import DEFAULT_MAX_ENTRIES, QueryCache


class Counting(HashEmbedder):
    """The hash provider, counting the queries it embeds (and able to switch model ids, as
    the local provider does when it follows a stored numeric variant)."""

    def __init__(self, dimension: int = 64) -> None:
        super().__init__(dimension)
        self.queries: list[str] = []
        self._lock = threading.Lock()

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            self.queries.append(text)
        return super().embed_query(text)

    def follow(self, stored: str | None) -> bool:
        if stored and stored != self.model_id:
            self.model_id = stored
            return True
        return False


def test_a_repeated_query_does_not_call_the_model() -> None:
    inner = Counting()
    cache = QueryCache(inner)
    first = cache.embed_query("grinder burrs")
    second = cache.embed_query("grinder burrs")
    assert first == second == HashEmbedder().embed_query("grinder burrs")
    assert inner.queries == ["grinder burrs"]
    assert (cache.hits, cache.misses) == (1, 1)
    cache.embed_query("grinder  burrs")  # the exact text is the key
    assert inner.queries == ["grinder burrs", "grinder  burrs"]
    second.append(9.0)  # a caller's list is its own
    assert cache.embed_query("grinder burrs") == first


def test_another_model_id_never_shares_entries() -> None:
    inner = Counting()
    cache = QueryCache(inner)
    cache.embed_query("espresso")
    assert cache.follow("hash-64@other")  # delegated to the provider
    assert cache.model_id == "hash-64@other"
    cache.embed_query("espresso")
    assert inner.queries == ["espresso", "espresso"]
    inner.model_id = "hash-64"
    cache.embed_query("espresso")  # the first model's entry is still there
    assert inner.queries == ["espresso", "espresso"]


def test_the_size_stays_bounded_least_recently_used_first() -> None:
    inner = Counting()
    cache = QueryCache(inner, max_entries=3)
    for text in ("a", "b", "c"):
        cache.embed_query(text)
    cache.embed_query("a")  # now "b" is the least recently used
    cache.embed_query("d")
    assert len(cache) == 3
    before = len(inner.queries)
    cache.embed_query("a")
    cache.embed_query("c")
    cache.embed_query("d")
    assert len(inner.queries) == before  # kept
    cache.embed_query("b")
    assert inner.queries[-1] == "b" and len(cache) == 3  # evicted, embedded again
    many = QueryCache(Counting())
    for i in range(DEFAULT_MAX_ENTRIES * 3):
        many.embed_query(f"query {i}")
    assert len(many) == DEFAULT_MAX_ENTRIES == 256
    with pytest.raises(ValueError):
        QueryCache(inner, max_entries=0)


def test_threads_share_it_safely() -> None:
    inner = Counting()
    cache = QueryCache(inner, max_entries=16)
    texts = [f"q{i % 24}" for i in range(600)]
    expected = {t: HashEmbedder().embed_query(t) for t in set(texts)}
    wrong: list[str] = []

    def work(chunk: Sequence[str]) -> None:
        for text in chunk:
            if cache.embed_query(text) != expected[text]:
                wrong.append(text)

    threads = [threading.Thread(target=work, args=(texts[i::6],)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not wrong
    assert len(cache) <= 16
    assert cache.hits + cache.misses == len(texts) and cache.misses == len(inner.queries)


def test_it_is_the_embedder_it_wraps() -> None:
    inner = Counting(dimension=32)
    cache = QueryCache(inner)
    assert isinstance(cache, Embedder)
    assert (cache.name, cache.dimension, cache.model_id) == ("hash", 32, "hash-32")
    assert (cache.max_tokens, cache.batch_size) == (inner.max_tokens, inner.batch_size)
    assert cache.embed_documents(["a b"]) == inner.embed_documents(["a b"])
    assert cache.texts_embedded == inner.texts_embedded == 2  # other attributes: delegated
    assert not cache.embeds_in_store and not cache.uses_local_cores
    assert inner.queries == []  # documents are not queries
    cache.batch_size = 3  # a write reaches the provider (ingest shrinks its batches)
    assert inner.batch_size == 3
