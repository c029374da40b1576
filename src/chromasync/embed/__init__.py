"""Embedding providers: small objects that turn texts into unit vectors.

Design notes: docs/internals.md, `embed/__init__.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import ConfigError
from ..plugins import Registry

if TYPE_CHECKING:
    from ..config.settings import Settings


@runtime_checkable
class Embedder(Protocol):
    """An embedding provider. A provider class subclasses it (the optional abilities below
    then have their defaults) and overrides what it has."""

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

    # -- optional abilities, with their defaults ----------------------------------------------

    @property
    def embeds_in_store(self) -> bool:
        """The store embeds texts itself (`server`): ingest writes documents without
        vectors, and a search sends the query's text."""
        return False

    @property
    def uses_local_cores(self) -> bool:
        """The model runs on this machine's cores (then ingest plans in one process,
        `sync.ahead`)."""
        return False

    def prefetch(self) -> None:
        """Start loading the model in the background (a first run, while the store opens)."""
        return None

    def follow(self, stored_model_id: str | None) -> bool:
        """Take the numeric variant of vectors already stored, for a provider with several
        variants of one model (the local one, `variant=auto`); True when it switched."""
        return False


ProviderFactory = Callable[[Mapping[str, Any]], Embedder]


def _lazy(module: str, name: str) -> ProviderFactory:
    """A factory that imports `name` from `module` (of this package) when first used."""

    def factory(options: Mapping[str, Any]) -> Embedder:
        provider: Embedder = getattr(import_module(module, __name__), name).from_options(options)
        return provider

    return factory


#: Embedding providers by name (`plugins.Registry`; entry point group `chromasync.providers`).
PROVIDERS: Registry[ProviderFactory] = Registry(
    "embedding provider",
    "chromasync.providers",
    {
        "local": _lazy(".local", "LocalEmbedder"),
        "hash": _lazy(".hashing", "HashEmbedder"),
        "openai": _lazy(".openai", "OpenAIEmbedder"),
        "server": _lazy(".server", "ServerEmbedder"),
    },
)


def register_provider(name: str, factory: ProviderFactory) -> None:
    """Make a provider available by name (plugins call this, or use the entry point)."""
    PROVIDERS.register(name, factory)


def make_embedder(name: str, options: Mapping[str, Any] | None = None) -> Embedder:
    """Build the provider `name` with its options; unknown names are a `ConfigError`, and so
    is a provider that lacks part of the `Embedder` protocol (subclass it)."""
    embedder = PROVIDERS.get(name)(options or {})
    missing = [m for m in _MEMBERS if not _has(embedder, m)]
    if missing:
        raise ConfigError(
            f"embedding provider {name!r} lacks {', '.join(missing)}; its class should "
            "subclass chromasync.embed.Embedder, which gives the optional abilities defaults"
        )
    return embedder


def _has(embedder: object, member: str) -> bool:
    """Whether `embedder` has `member`, looked up without running a property (a provider's
    `dimension` may ask its server)."""
    return hasattr(type(embedder), member) or member in getattr(embedder, "__dict__", {})


_MEMBERS = (
    "name",
    "max_tokens",
    "batch_size",
    "model_id",
    "dimension",
    "tokenizer_path",
    "embed_documents",
    "embed_query",
    "embeds_in_store",
    "uses_local_cores",
    "prefetch",
    "follow",
)


def embedder_for(settings: Settings) -> Embedder:
    """The embedding provider the settings name (constructed cheaply: loads on first use)."""
    return make_embedder(settings.provider, settings.embedding_options())


__all__ = [
    "PROVIDERS",
    "Embedder",
    "embedder_for",
    "make_embedder",
    "register_provider",
]
