"""The index seam: one object every surface searches, reads and reindexes through.

While `chromasync serve`, `watch` or `mcp` owns a data dir, nothing else may open its store;
callers send their requests through the owner's socket instead (see `locate`). `open_index`
hides that choice: it yields the owner's client when an owner runs, else a `LocalIndex` over
the API in this process. The owner's own `Service` is an `Index` too, so a surface that may
itself be the owner (MCP) holds one type either way.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from .. import api
from ..config.settings import Settings
from ..records import Hit
from .locate import find_owner

if TYPE_CHECKING:
    from .client import OwnerClient


class Index(Protocol):
    """What a surface asks of the index, wherever it runs."""

    def retrieve(self, request: api.SearchRequest) -> api.SearchResult: ...

    def status(self) -> dict[str, Any]: ...

    def sources(self) -> list[dict[str, Any]]: ...

    def get_document(self, path: str, source: str | None = None) -> list[Hit]: ...

    def get(self, spec: str, source: str | None = None) -> dict[str, Any]:
        """`PATH[:START[-END]]`'s current lines: `api.FileLines` as JSON."""
        ...

    def multi_get(
        self, pattern: str, max_bytes: int = api.DEFAULT_MAX_BYTES, source: str | None = None
    ) -> dict[str, Any]:
        """{files: [FileLines as JSON], left_out} for the indexed files matching a glob."""
        ...

    def ask(self, request: api.SearchRequest, *, fallback: bool | None = None) -> dict[str, Any]:
        """Retrieve, then answer `request.query`: the answer's JSON."""
        ...


class LocalIndex:
    """The index in this process, when no owner runs (the data dir's lock rules apply)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def retrieve(self, request: api.SearchRequest) -> api.SearchResult:
        return api.retrieve(request, self.settings)

    def status(self) -> dict[str, Any]:
        import dataclasses

        return {"sources": [dataclasses.asdict(r) for r in api.status(self.settings)]}

    def sources(self) -> list[dict[str, Any]]:
        import dataclasses

        return [dataclasses.asdict(s) for s in api.list_sources(self.settings)]

    def get_document(self, path: str, source: str | None = None) -> list[Hit]:
        return api.get_document(self.settings, path, source)

    def get(self, spec: str, source: str | None = None) -> dict[str, Any]:
        return api.get_json(self.settings, spec, source)

    def multi_get(
        self, pattern: str, max_bytes: int = api.DEFAULT_MAX_BYTES, source: str | None = None
    ) -> dict[str, Any]:
        return api.multi_get_json(self.settings, pattern, max_bytes, source)

    def ask(self, request: api.SearchRequest, *, fallback: bool | None = None) -> dict[str, Any]:
        result = api.retrieve(request, self.settings)
        return api.answer(request.query, result, self.settings, fallback=fallback).as_json()


def owner_client(settings: Settings) -> OwnerClient | None:
    """A client of the process that owns the data dir (serve, watch, mcp), or None."""
    info = find_owner(settings.data_dir)
    if info is None:
        return None
    from .client import OwnerClient  # httpx loads only when there is an owner to talk to

    return OwnerClient(info, token=settings.api_token)


@contextmanager
def open_index(settings: Settings) -> Iterator[Index]:
    """The owner's client while an owner runs, else the index in this process."""
    client = owner_client(settings)
    if client is None:
        yield LocalIndex(settings)
        return
    with client:
        yield client


__all__: Sequence[str] = ["Index", "LocalIndex", "open_index", "owner_client"]
