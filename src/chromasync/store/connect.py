"""Connecting to the store: an embedded PersistentClient, or a client of a Chroma server.

Design notes: docs/internals.md, `store/connect.py`.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..datadir import CHROMA_DIR, make_private_dir
from ..errors import ChromasyncError, ConfigError, NotFound, StoreError, not_installed
from ..retry import RetryPolicy
from .chroma import Store
from .failures import store_error
from .target import StoreConfig, Target, parse_target

if TYPE_CHECKING:
    from ..config.settings import Settings as AppSettings

log = logging.getLogger(__name__)
#: chromadb shares one system per embedded path between clients, and creating the first one
#: from two threads at once races inside chromadb ("no attribute 'bindings'"): one at a time.
_EMBEDDED_OPEN = threading.Lock()
#: The database file (device, inode) of each embedded store this process opened. chromadb
#: keeps one system per path for the life of the process; once another process has deleted
#: that folder and it is made again (`model drop` then `model build`), the kept system can
#: neither read nor write the new file ("no such table", "attempt to write a readonly
#: database"). A store whose file is no longer the one opened gets a fresh system.
_OPENED: dict[str, tuple[int, int] | None] = {}
#: chromadb's database file in an embedded store's folder.
EMBEDDED_DATABASE = "chroma.sqlite3"


@functools.cache
def _chroma_settings(factory: Any) -> Any:
    """chromadb's client settings: a pydantic-settings object reads the whole environment
    when built, which cost a warm search a fifth of its time, so it is built once (each
    client gets a copy: chromadb's HTTP client writes the server's port into its settings)."""
    return factory(anonymized_telemetry=False)


def import_chromadb() -> Any:
    """chromadb, imported; a `StoreError` when it is missing, or installed but failing to
    import (never called missing then: `errors.not_installed`)."""
    try:
        import chromadb
        import chromadb.config
    except ImportError as exc:
        if not_installed(exc, "chromadb"):
            raise StoreError("chromadb is not installed") from exc
        raise StoreError(f"chromadb is installed but failed to import: {exc}") from exc
    return chromadb


def open_store(config: StoreConfig, existing: bool = False, reading: bool = False) -> Store:
    """Connect to the configured store (importing chromadb only now).

    With `existing`, an embedded store that was never created raises `NotFound` instead of
    being created (a dry run must write nothing). With `reading` (a search, which writes
    nothing), an embedded store on a read-only file system is opened from a private
    temporary copy (Chroma's embedded client cannot open a folder it may not write).
    """
    target = parse_target(config.url) if config.url else None
    if existing and target is None and not (config.data_dir / CHROMA_DIR).is_dir():
        raise NotFound(f"no embedded store at {config.describe()} yet")
    chromadb = import_chromadb()
    settings = _chroma_settings(chromadb.config.Settings).model_copy()
    if target is None:
        path = config.data_dir / CHROMA_DIR
        if reading and path.is_dir() and not os.access(path, os.W_OK):
            path = _readable_copy(path)
        try:
            make_private_dir(path)
            with _EMBEDDED_OPEN:
                _forget_if_replaced(str(path))
                client = chromadb.PersistentClient(path=str(path), settings=settings)
                _OPENED[str(path)] = _database_identity(str(path))
        except Exception as exc:
            raise StoreError(f"cannot open Chroma at {config.describe()}: {exc}") from exc
        return Store(client, config)
    if target.kind == "cloud" and not config.token:  # before dialing anything
        raise ConfigError(
            f"Chroma Cloud at {config.describe()} needs an API key, and none is set: set "
            "CHROMA_API_KEY or CHROMASYNC_CHROMA_TOKEN (or pass --chroma-token)"
        )
    _probe(target, config)
    try:
        with _bounded_sessions(config):
            client = _server_client(chromadb, target, config, settings)
    except ChromasyncError:
        raise
    except Exception as exc:
        raise store_error(config, "connect", exc) from exc
    _install_transport(client, config)
    return Store(client, config, target)


def _database_identity(path: str) -> tuple[int, int] | None:
    try:
        found = os.stat(os.path.join(path, EMBEDDED_DATABASE))
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _forget_if_replaced(path: str) -> None:
    """Stop and forget chromadb's system for `path` when its database file is not the one
    this process opened (deleted, or replaced, by another process)."""
    if path not in _OPENED or _OPENED[path] == _database_identity(path):
        return
    from chromadb.api.shared_system_client import SharedSystemClient

    log.info("the embedded store at %s was replaced since it was opened: opening it anew", path)
    system = SharedSystemClient._identifier_to_system.pop(path, None)
    SharedSystemClient._identifier_to_refcount.pop(path, None)
    if system is not None:
        with contextlib.suppress(Exception):  # its files are gone: nothing of it is kept
            system.stop()


def _server_client(chromadb: Any, target: Target, config: StoreConfig, settings: Any) -> Any:
    if target.kind == "cloud":
        return chromadb.CloudClient(
            tenant=config.tenant,
            database=config.database,
            api_key=config.token,
            settings=settings,
            cloud_host=target.host,
            cloud_port=target.port,
            enable_ssl=target.ssl,
        )
    headers = {"Authorization": f"Bearer {config.token}"} if config.token else None
    return chromadb.HttpClient(
        host=target.host,
        port=target.port,
        ssl=target.ssl,
        headers=headers,
        settings=settings,
        tenant=config.tenant or "default_tenant",
        database=config.database or "default_database",
    )


class _BoundedHttpx:
    """chromadb's `httpx` while a client is made: `Client` is ours (the deadlines and caps
    of `_transport`), everything else httpx's own."""

    def __init__(self, config: StoreConfig) -> None:
        self._config = config

    def Client(self, **kwargs: Any) -> Any:
        import httpx

        config = self._config
        return httpx.Client(
            transport=_transport(config), timeout=_timeout(config), limits=kwargs["limits"]
        )

    def __getattr__(self, name: str) -> Any:
        import httpx

        return getattr(httpx, name)


#: One client is made at a time (chromadb's module is patched meanwhile).
_MAKING = threading.Lock()


@contextmanager
def _bounded_sessions(config: StoreConfig) -> Iterator[None]:
    """While chromadb makes a server client: the session its `FastAPI` makes has our
    deadlines and caps from the start. chromadb's own has no timeout and asks the server
    who we are and whether the tenant and database exist before `_install_transport` can
    replace it, so a server that answered the heartbeat and then held those requests would
    have held the command for good."""
    from chromadb.api import fastapi

    namespace = vars(fastapi)
    with _MAKING:
        real = namespace["httpx"]
        namespace["httpx"] = _BoundedHttpx(config)
        try:
            yield
        finally:
            namespace["httpx"] = real


def _readable_copy(path: Path) -> Path:
    """A private copy of a read-only embedded store, removed when the process exits."""
    copy = Path(tempfile.mkdtemp(prefix="chromasync-readonly-")) / CHROMA_DIR
    atexit.register(shutil.rmtree, copy.parent, True)
    try:
        shutil.copytree(path, copy)
    except OSError as exc:
        raise StoreError(
            f"the store at {path} is read-only and could not be copied to search it: {exc}"
        ) from exc
    size = sum(f.stat().st_size for f in copy.rglob("*") if f.is_file())
    log.warning("%s is read-only: searching a temporary copy of it (%.1f MB)", path, size / 1e6)
    return copy


#: The most bytes of one answer of a Chroma server (a page of records with their documents
#: is a few MB): past it the request fails, it is not retried.
MAX_ANSWER_BYTES = 256 * 1024 * 1024


def _transport(config: StoreConfig) -> Any:
    """Each attempt ends within `timeout_s`, its answer read whole (at most
    `MAX_ANSWER_BYTES`): a server that holds the connection, or drips its answer, costs
    one timeout an attempt; a request with its retries ends within `timeout_s` times its
    attempts."""
    import httpx

    from ..retry import DeadlineTransport, RetryingTransport

    attempt = DeadlineTransport(
        httpx.HTTPTransport(verify=True), config.timeout_s, MAX_ANSWER_BYTES
    )
    total = config.timeout_s * max(1, config.retry.attempts)
    return RetryingTransport(attempt, config.retry, total_s=total)


def _timeout(config: StoreConfig) -> Any:
    import httpx

    return httpx.Timeout(config.timeout_s, connect=min(config.timeout_s, 10.0))


def _probe(target: Target, config: StoreConfig) -> None:
    """One heartbeat, with retries and timeouts, before chromadb's own client connects."""
    import httpx

    url = f"{target.base_url}/api/v2/heartbeat"
    headers = {}
    if config.token:
        if target.kind == "cloud":
            headers["X-Chroma-Token"] = config.token
        else:
            headers["Authorization"] = f"Bearer {config.token}"
    try:
        with httpx.Client(
            transport=_transport(config), timeout=_timeout(config), headers=headers
        ) as http:
            http.get(url)
    except Exception as exc:
        raise store_error(config, "heartbeat", exc) from exc


def _install_transport(client: Any, config: StoreConfig) -> None:
    """Replace chromadb's HTTP session (no timeout, no retries) with ours, same headers."""
    import httpx

    server = getattr(client, "_server", None)
    session = getattr(server, "_session", None)
    if not isinstance(session, httpx.Client):  # pragma: no cover - a chromadb upgrade
        raise StoreError(
            f"cannot configure retries for Chroma at {config.describe()}: this chromadb "
            "version keeps its HTTP session elsewhere; install the pinned chromadb"
        )
    replacement = httpx.Client(
        transport=_transport(config), timeout=_timeout(config), headers=session.headers
    )
    server._session = replacement  # type: ignore[union-attr]
    session.close()


def open_store_for(settings: AppSettings, existing: bool = False, reading: bool = False) -> Store:
    """The configured store: embedded under the data dir, or a Chroma server (`reading`:
    for a search, which may open a read-only store from a copy). chromadb is imported only
    when the store opens (`open_store`)."""
    config = StoreConfig(
        data_dir=settings.data_dir,
        url=settings.chroma_url,
        tenant=settings.tenant,
        database=settings.database,
        token=settings.chroma_token,
        timeout_s=settings.chroma_timeout,
        retry=RetryPolicy(attempts=max(1, settings.chroma_retries)),
        batch_size=settings.batch_size,
    )
    return open_store(config, existing, reading)
