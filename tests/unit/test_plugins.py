"""One registry serves providers, rerankers and chunkers; embedder abilities have defaults."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from chromasync.chunk import CHUNKERS, Budget, chunk_document
from chromasync.embed import PROVIDERS, Embedder, make_embedder, register_provider
from chromasync.embed.hashing import HashEmbedder
from chromasync.embed.querycache import QueryCache
from chromasync.embed.tokens import default_token_meter
from chromasync.errors import ConfigError
from chromasync.plugins import Registry
from chromasync.records import Chunk, Document
from chromasync.retrieve.rerank import RERANKERS, make_reranker


@pytest.mark.parametrize(
    ("registry", "kind", "known"),
    [
        (PROVIDERS, "embedding provider", "hash, local, openai, server"),
        (RERANKERS, "reranker", "cross-encoder"),
        (CHUNKERS, "chunker", "code, document, markdown, text"),
    ],
)
def test_an_unknown_name_lists_the_known_ones(
    registry: Registry[Any], kind: str, known: str
) -> None:
    with pytest.raises(ConfigError, match=f"^unknown {kind} 'nope'; choose one of: {known}$"):
        registry.get("nope")


def test_the_makers_use_the_registry() -> None:
    with pytest.raises(ConfigError, match="unknown embedding provider 'nope'"):
        make_embedder("nope")
    with pytest.raises(ConfigError, match="unknown reranker 'nope'; choose one of: cross-encoder"):
        make_reranker("/some/model", name="nope")
    assert make_reranker(None, name="nope") is None  # no model: reranking is off


@pytest.fixture
def restored() -> Iterator[None]:
    saved = {r: dict(r._items) for r in (PROVIDERS, CHUNKERS)}
    yield
    for registry, items in saved.items():
        registry._items.clear()
        registry._items.update(items)


def test_a_registered_chunker_serves_its_kind(restored: None) -> None:
    def shouting(doc: Document, budget: Budget) -> list[Chunk]:
        return [Chunk(text=doc.text.upper(), start_line=1, end_line=1)]

    doc = Document("a.md", "hello there", 1, "0" * 64, "markdown", None, {})
    budget = Budget(max_tokens=64, meter=default_token_meter())
    assert chunk_document(doc, budget)[0].text == "hello there"
    CHUNKERS.register("markdown", shouting)
    assert [c.text for c in chunk_document(doc, budget)] == ["HELLO THERE"]


def test_entry_points_are_found_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package's entry point, found through importlib.metadata as an installed one is."""
    (tmp_path / "cs_test_plugin.py").write_text(
        "def make(options):\n    return ('made', options)\n"
    )
    info = tmp_path / "cs_test_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cs-test-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[chromasync.test-plugins]\nthing = cs_test_plugin:make\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registry: Registry[Any] = Registry("test plugin", "chromasync.test-plugins", {"builtin": len})
    assert registry.names() == ["builtin", "thing"]
    assert registry.get("thing")({"a": 1}) == ("made", {"a": 1})
    assert registry.get("builtin") is len
    sys.modules.pop("cs_test_plugin", None)


class Bare:
    """A provider written to the protocol's required members only, not subclassing it."""

    name = "bare"
    max_tokens = 64
    batch_size = 8
    model_id = "bare"
    dimension = 4
    tokenizer_path = None

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0, 0.0, 0.0]


class Subclassed(Embedder):
    name = "subclassed"
    max_tokens = 64
    batch_size = 8
    model_id = "subclassed"
    dimension = 4
    tokenizer_path = None

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0, 0.0, 0.0]


def test_optional_abilities_have_defaults_on_the_protocol(restored: None) -> None:
    def factory(options: Mapping[str, Any]) -> Embedder:
        return Subclassed()

    register_provider("subclassed", factory)
    assert "subclassed" in PROVIDERS.names()
    made = make_embedder("subclassed")
    assert (made.embeds_in_store, made.uses_local_cores, made.follow("x")) == (False, False, False)
    assert made.prefetch() is None
    wrapped = QueryCache(made)
    assert (wrapped.embeds_in_store, wrapped.follow("x")) == (False, False)


def test_a_provider_lacking_the_abilities_is_refused_by_name(restored: None) -> None:
    register_provider("bare", lambda options: Bare())  # type: ignore[arg-type,return-value]
    with pytest.raises(ConfigError) as info:
        make_embedder("bare")
    message = str(info.value)
    assert "'bare' lacks embeds_in_store, uses_local_cores, prefetch, follow" in message
    assert "subclass chromasync.embed.Embedder" in message


def test_the_built_in_providers_say_what_they_can() -> None:
    hashed = HashEmbedder()
    assert isinstance(hashed, Embedder) and not hashed.embeds_in_store
    assert make_embedder("server").embeds_in_store
