"""The index seam: one object every surface searches, reads and reindexes through.

While `chromasync serve`, `watch` or `mcp` owns a data dir, nothing else may open its store;
callers send their requests through the owner's socket instead (see `locate`). `open_index`
hides that choice: it yields the owner's client when an owner runs, else a `LocalIndex` over
the API in this process. The owner's own `Service` is an `Index` too, so a surface that may
itself be the owner (MCP) holds one type either way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from .. import api
from ..config.settings import Settings
from ..datadir import STATE_FILE
from ..records import Hit
from . import daemon as daemons
from .locate import OwnerInfo, find_owner, service_token

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
    """A client of the process that owns the data dir (serve, watch, mcp), or None.

    The search daemon does not count: it only reads, and whoever asks for this (a writer, a
    long-running surface) takes the lock from it instead (`state.lock.ask_reader_to_leave`);
    a frozen one is ended here (`dial.make_way`), since it would never leave.
    """
    info = find_owner(settings.data_dir)
    if info is not None and info.role == daemons.ROLE and not daemons.answers(info):
        daemons.make_way(str(settings.data_dir))
    if info is None or info.role == daemons.ROLE:
        return None
    return _client(info, settings)


def _same_settings(info: OwnerInfo, settings: Settings) -> bool:
    return info.key == daemons.settings_key(settings)


def _client(info: OwnerInfo, settings: Settings) -> OwnerClient:
    from .client import OwnerClient  # httpx loads only when there is an owner to talk to

    # the owner's token: the one set, else the one `serve` made in the data dir
    return OwnerClient(info, token=settings.api_token or service_token(settings.data_dir))


@contextmanager
def open_index(
    settings: Settings,
    *,
    start: Mapping[str, Any] | None = None,
    register: str | None = None,
    on_start: Callable[[], None] | None = None,
) -> Iterator[Index]:
    """The owner's client while an owner runs, else the index in this process.

    `start`: the command's flags; when given (and `CHROMASYNC_NO_DAEMON` is not set), a
    search daemon with these settings is started if no owner runs (`daemon.ensure`), unless
    nothing was indexed here yet (a mistyped `--data-dir` gets its error, not a daemon).
    `register`: the command line's key for the console script's daemon client.
    """
    info: OwnerInfo | None
    indexed = (settings.data_dir / STATE_FILE).exists() or bool(settings.chroma_url)
    if start is not None and indexed and not daemons.daemon_off(os.environ):
        info = daemons.ensure(settings, start, on_start=on_start)
    else:
        info = find_owner(settings.data_dir)
        if info is not None and info.role == daemons.ROLE:
            info = info if _same_settings(info, settings) and daemons.answers(info) else None
    if info is None:
        yield LocalIndex(settings)
        return
    with _client(info, settings) as client:
        if register and info.role == daemons.ROLE:
            client.register(register, info.key)  # ensure() returns a daemon of this key
        yield client


__all__: Sequence[str] = ["Index", "LocalIndex", "open_index", "owner_client"]
