"""Embedding providers: small objects that turn texts into unit vectors.

A provider declares its `name`, `model_id` (recorded in the collection, so a model change
fails loudly), `dimension`, `max_tokens` and `batch_size`, and embeds documents and queries
separately. Providers are registered by name; third-party ones through the entry point group
`chromasync.providers`. Construction must be cheap: the model loads on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..config.settings import Settings


@runtime_checkable
class Embedder(Protocol):
    name: str
    max_tokens: int
    batch_size: int

    @property
    def model_id(self) -> str:
        """Recorded on the collection and keys the embedding cache (for the local provider
        it includes the numeric variant, `...@int8`)."""
        ...

    @property
    def dimension(self) -> int: ...

    @property
    def tokenizer_path(self) -> str | None:
        """A `tokenizer.json` that measures the model's word pieces (None: whitespace)."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


ProviderFactory = Callable[[Mapping[str, Any]], Embedder]


def _local(options: Mapping[str, Any]) -> Embedder:
    from .local import LocalEmbedder

    return LocalEmbedder.from_options(options)


def _hash(options: Mapping[str, Any]) -> Embedder:
    from .hashing import HashEmbedder

    return HashEmbedder.from_options(options)


def _openai(options: Mapping[str, Any]) -> Embedder:
    from .openai import OpenAIEmbedder

    return OpenAIEmbedder.from_options(options)


def _server(options: Mapping[str, Any]) -> Embedder:
    from .server import ServerEmbedder

    return ServerEmbedder.from_options(options)


_BUILTIN: dict[str, ProviderFactory] = {
    "local": _local,
    "hash": _hash,
    "openai": _openai,
    "server": _server,
}


def follow_stored(embedder: Embedder, stored_model_id: str | None) -> bool:
    """Let a provider with several numeric variants of one model (the local one, with
    `variant=auto`) take the variant of vectors already stored; True when it switched."""
    follow = getattr(embedder, "follow", None)
    return bool(follow(stored_model_id)) if callable(follow) else False


def register_provider(name: str, factory: ProviderFactory) -> None:
    """Make a provider available by name (plugins call this, or use the entry point)."""
    _BUILTIN[name] = factory


def provider_names() -> list[str]:
    return sorted(set(_BUILTIN) | set(_entry_points()))


def _entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group="chromasync.providers")}


def make_embedder(name: str, options: Mapping[str, Any] | None = None) -> Embedder:
    """Build the provider `name` with its options; unknown names are a `ConfigError`."""
    options = options or {}
    factory = _BUILTIN.get(name)
    if factory is None:
        plugin = _entry_points().get(name)
        if plugin is None:
            raise ConfigError(
                f"unknown embedding provider {name!r}; choose one of: "
                + ", ".join(provider_names())
            )
        factory = plugin.load()
    return factory(options)


def embedder_for(settings: Settings) -> Embedder:
    """The embedding provider the settings name (constructed cheaply: loads on first use)."""
    return make_embedder(settings.provider, settings.embedding_options())


__all__ = [
    "Embedder",
    "embedder_for",
    "follow_stored",
    "make_embedder",
    "provider_names",
    "register_provider",
]
