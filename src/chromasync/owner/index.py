"""The index seam: one object every surface searches, reads and reindexes through.

While `chromasync serve`, `watch` or `mcp` owns a data dir, nothing else may open its store;
callers send their requests through the owner's socket instead (see `locate`). `open_index`
hides that choice: it yields the owner's client when an owner runs, else a `LocalIndex` over
the API in this process. The owner's own `Service` is an `Index` too, so a surface that may
itself be the owner (MCP) holds one type either way. Commands (CLI, REST, MCP) reach the
index through `open_index` (or, as the owner, their `Service`) and nothing else.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, cast

from ..config.settings import Settings
from ..datadir import STATE_FILE
from ..errors import LockError
from . import daemon as daemons
from .dial import daemon_off, make_way
from .local import LocalIndex
from .locate import OwnerInfo, find_owner, service_token
from .seam import OPERATIONS, Index

if TYPE_CHECKING:
    from .client import OwnerClient


log = logging.getLogger(__name__)


def owner_client(settings: Settings) -> OwnerClient | None:
    """A client of the process that owns the data dir (serve, watch, mcp), or None (what a
    surface that may become the owner asks: `mcp.backend`)."""
    info = _writers_owner(settings)
    return None if info is None else _client(info, settings)


def _writers_owner(settings: Settings) -> OwnerInfo | None:
    """The owner a writer goes through (serve, watch, mcp), or None.

    The search daemon does not count: it only reads, and whoever asks for this (a writer, a
    long-running surface) takes the lock from it instead (`state.lock.ask_reader_to_leave`);
    a frozen one is ended here (`dial.make_way`), since it would never leave.
    """
    info = find_owner(settings.data_dir)
    if info is not None and info.role == daemons.ROLE and not daemons.answers(info):
        make_way(str(settings.data_dir))
    if info is None or info.role == daemons.ROLE:
        return None
    return info


def _same_settings(info: OwnerInfo, settings: Settings) -> bool:
    return info.key == daemons.settings_key(settings)


def _client(info: OwnerInfo, settings: Settings) -> OwnerClient:
    """A client of the owner `info`; `LockError` when it is no daemon and answers with other
    settings than the caller's (it would answer as they are not: another collection, model,
    reranker, store or config file), since the caller cannot open the store it holds."""
    from .client import OwnerClient  # httpx loads only when there is an owner to talk to

    if info.role != daemons.ROLE and info.key and info.key != daemons.settings_key(settings, True):
        raise LockError(
            f"{info.describe()} owns this data dir with other settings than this command's "
            "(collection, embedding model, reranker, Chroma store or config file); run it "
            "with that owner's config file and CHROMASYNC_* settings, or stop the owner first"
        )

    # the owner's token: the one set, else the one `serve` made in the data dir
    token = settings.api_token or service_token(settings.data_dir)
    return OwnerClient(info, token=token, settings=settings)


class Hosted:
    """The search daemon's own index, while it runs a client's command line (`cli.daemon`):
    its settings key, and whether the command used it."""

    def __init__(self, key: str, index: Index) -> None:
        self.key = key
        self.index = index
        self.used = False


HOSTED: ContextVar[Hosted | None] = ContextVar("hosted", default=None)


class NotMine(Exception):
    """The command line the daemon runs resolved to other settings than the daemon's."""


@contextmanager
def open_index(
    settings: Settings,
    *,
    start: Mapping[str, Any] | None = None,
    daemon: bool = True,
    writes: bool = False,
    on_start: Callable[[], None] | None = None,
) -> Iterator[Index]:
    """The owner's client while an owner runs, else the index in this process.

    `start`: the command's flags; when given, a search daemon with these settings is
    started if no owner runs (`daemon.ensure`), unless nothing was indexed here yet (a
    mistyped `--data-dir` gets its error, not a daemon).
    `daemon`: False (`--no-daemon`; `CHROMASYNC_NO_DAEMON` set) keeps the search daemon out
    of it: none is started, asked or used; an owner (serve, watch, mcp) still is.
    `writes`: the command writes (`ingest`): never through the search daemon, which only
    reads (the writer takes the lock from it; a frozen one is ended: `owner_client`).
    While the search daemon runs a client's command line (`HOSTED`), the daemon's own index,
    when these are its settings; else `NotMine` (the client runs the command itself).
    """
    hosted = HOSTED.get()
    if hosted is not None:
        if writes or not daemon or daemons.settings_key(settings) != hosted.key:
            raise NotMine(settings.data_dir)
        hosted.used = True
        yield hosted.index
        return
    info: OwnerInfo | None
    indexed = (settings.data_dir / STATE_FILE).exists() or bool(settings.chroma_url)
    daemon = daemon and not daemon_off(os.environ)
    if writes:
        info = _writers_owner(settings)
    elif start is not None and daemon and indexed:
        info = daemons.ensure(settings, start, on_start=on_start)
    else:
        info = find_owner(settings.data_dir)
        if info is not None and info.role == daemons.ROLE:
            usable = daemon and _same_settings(info, settings) and daemons.answers(info)
            info = info if usable else None
    if info is None:
        yield LocalIndex(settings)
        return
    with _client(info, settings) as client:
        if info.role != daemons.ROLE:
            yield client
            return
        yield cast("Index", _DaemonOrLocal(client, lambda: LocalIndex(settings)))


class _DaemonOrLocal:
    """The search daemon's client, that falls back to the index in this process for good
    once the daemon has taken a call and not answered it within its deadline (hung, not
    stopped: a stopped one is never talked to). The daemon holds no work, so reading here
    loses nothing; it is what the console script's client does too (`dial.post`). The
    operations that use settings a daemon does not hold (`daemon.IN_PROCESS`: the chat
    model's) always run here."""

    def __init__(self, client: OwnerClient, local: Callable[[], LocalIndex]) -> None:
        self._client = client
        self._make_local = local
        self._local: LocalIndex | None = None

    def __getattr__(self, name: str) -> Any:
        if self._local is None and name in daemons.IN_PROCESS:
            return getattr(self._make_local(), name)
        if self._local is not None:
            return getattr(self._local, name)
        remote = getattr(self._client, name)
        if not callable(remote):
            return remote

        def call(*args: Any, **kwargs: Any) -> Any:
            from ..errors import StoreError
            from .client import no_answer

            if self._local is not None:
                return getattr(self._local, name)(*args, **kwargs)
            try:
                return remote(*args, **kwargs)
            except StoreError as exc:
                if not no_answer(exc):
                    raise
                log.warning("%s; this command runs in its own process", exc)
                self._local = self._make_local()
                return getattr(self._local, name)(*args, **kwargs)

        return call


__all__: Sequence[str] = [
    "HOSTED",
    "OPERATIONS",
    "Hosted",
    "Index",
    "LocalIndex",
    "NotMine",
    "open_index",
    "owner_client",
]
