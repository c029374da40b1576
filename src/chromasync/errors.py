"""The exceptions chromasync raises, one class per thing a user can fix.

    ChromasyncError            base of everything below; never raised itself
    ├── ConfigError            bad flag, environment variable or config file
    ├── SourceError            a source root is missing, unreadable or unsafe to sync
    │   └── AccessDenied       a path from a request leads outside the allowed roots
    ├── EmbeddingError         the embedding provider failed or does not match the collection
    ├── StoreError             Chroma (embedded or server) refused or failed a call
    │   └── LockError          another process owns the data dir
    ├── NotFound               a collection, source, path or job does not exist
    └── AnswerError            no answer could be written (`ask`, `summarize`)
        ├── ChatRefused        the chat endpoint refused the key (401/403)
        └── ChatUnreachable    the chat endpoint is down, timed out or stayed overloaded

Messages name the path, collection or provider, say what failed and suggest a next step.
They never contain a secret. Third-party errors are wrapped with ``raise ... from``.
"""

from __future__ import annotations

import errno
import re
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

V = TypeVar("V")


class ChromasyncError(Exception):
    """Base class: every error chromasync raises on purpose."""


class ConfigError(ChromasyncError):
    """A flag, environment variable or config file is wrong."""


class SourceError(ChromasyncError):
    """A source root cannot be walked safely."""


class AccessDenied(SourceError):
    """A path given by a client resolves outside the roots it may reach."""


class EmbeddingError(ChromasyncError):
    """The embedding provider failed, or its model does not match the collection."""


class StoreError(ChromasyncError):
    """The vector store refused or failed a request."""


class LockError(StoreError):
    """Another process holds the data dir's lock."""


class NotFound(ChromasyncError):
    """A collection, source, document or job does not exist."""


class AnswerError(ChromasyncError):
    """An answer cannot be produced (the chat endpoint failed or answered nonsense)."""


class ChatRefused(AnswerError):
    """The chat endpoint refused the request's key (HTTP 401 or 403)."""


class ChatUnreachable(AnswerError):
    """The chat endpoint could not be reached, timed out or stayed overloaded."""


def error_classes() -> list[type[ChromasyncError]]:
    """Every class of the tree, the base first (subclasses defined in any stage included)."""
    found: list[type[ChromasyncError]] = [ChromasyncError]
    for cls in found:
        found.extend(sub for sub in cls.__subclasses__() if sub not in found)
    return found


def error_class(name: str) -> type[ChromasyncError] | None:
    """The class of the tree named `name` (a REST error body's `error`), or None."""
    return next((cls for cls in error_classes() if cls.__name__ == name), None)


#: Each class on each surface, one row a class: (CLI exit code: 2 bad usage, 1 a failure;
#: HTTP status; MCP tool-error kind; NATS error-reply kind). Each surface reads its column
#: (`EXIT_CODES`, `ERROR_STATUS`, `mcp.ERROR_KINDS`, `nats.errors.ERROR_KINDS`) with `lookup`.
SURFACES: dict[type[ChromasyncError], tuple[int, int, str, str]] = {
    ChromasyncError: (1, 500, "failed", "failed"),
    ConfigError: (2, 400, "invalid-argument", "invalid_request"),
    SourceError: (1, 400, "invalid-argument", "invalid_request"),
    AccessDenied: (1, 403, "permission-denied", "forbidden"),
    EmbeddingError: (1, 409, "failed-precondition", "unavailable"),
    StoreError: (1, 503, "unavailable", "unavailable"),
    LockError: (1, 409, "busy", "busy"),
    NotFound: (1, 404, "not-found", "not_found"),
    AnswerError: (1, 502, "failed", "failed"),
    ChatRefused: (1, 502, "permission-denied", "forbidden"),
    ChatUnreachable: (1, 503, "unavailable", "unavailable"),
}


def lookup(table: Mapping[type[ChromasyncError], V], exc: ChromasyncError) -> V:
    """A surface's entry for `exc`: the most specific class of its MRO in `table`.

    Every surface keeps one table (CLI exit codes, HTTP statuses, MCP error kinds); each
    table names every class of the tree, so this only walks the MRO for classes that a
    test has not seen yet."""
    for cls in type(exc).__mro__:
        if cls in table:
            return table[cls]
    return table[ChromasyncError]


#: A URL's user info: a name, then after a colon a password that may hold `/?#@` unescaped
#: (up to its last `@` before a blank or the next `://`).
_USERINFO = re.compile(r"(?<=://)(?:[^\s/?#@]*:(?:(?!://)\S)*|[^/?#\s]*)@")
#: The value of a query parameter named like a secret (`?token=`, `&api_key=`, `sig=`).
_QUERY_SECRET = re.compile(
    r"(?i)([?&;][^\s=&#]*(?:token|key|secret|pass|auth|sig|credential)[^\s=&#]*=)[^\s&#'\"]*"
)


def shown_url(text: str) -> str:
    """`text` with the user info of every URL in it left out (`nats://u:pw@host` ->
    `nats://host`) and secret query values hidden (`?token=***`): what every printed line,
    message and log of a URL goes through."""
    return _QUERY_SECRET.sub(r"\1***", _USERINFO.sub("", text))


_SECRET_NAMES = {
    "token",
    "api_key",
    "apikey",
    "api-key",
    "secret",
    "password",
    "passwd",
    "credentials",
    "authorization",
    "bearer",
    "private_key",
}
_SECRET_SUFFIXES = ("_token", "-token", "_secret", "-secret", "_password", "_api_key", "-api-key")


def is_secret_key(name: str) -> bool:
    """Whether a config key or option `name` names a secret (`token`, `api_key`, `*_password`)."""
    lowered = str(name).strip().lower()
    return lowered in _SECRET_NAMES or lowered.endswith(_SECRET_SUFFIXES)


def url_problem(text: str) -> str | None:
    """Why no client can read the URL(s) `text` (comma-separated), never showing it (a
    password's `#` starts a fragment, and its head reads as a port), or None."""
    try:
        for url in text.split(","):
            urlsplit(url.strip()).port  # noqa: B018 - raises for a port or host it cannot read
    except ValueError:
        return (
            "is not a URL whose host and port can be read (a `#`, `/` or `?` in a "
            "password must be percent-encoded)"
        )
    return None


def not_installed(exc: ImportError, name: str) -> bool:
    """`exc` says the package `name` is missing, not that importing it failed (a package
    that is installed but broke, or was half-imported by another thread, is not missing)."""
    return isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == name


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM and SIGHUP (a closed terminal) raise KeyboardInterrupt meanwhile (in the main
    thread), as SIGINT does, so that `finally` blocks run (a download's temporary folder)
    instead of the process dying of the signal; one ignored (`nohup`) stays ignored.
    Elsewhere than the main thread: nothing."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {
        sig: signal.signal(sig, signal.default_int_handler)
        for sig in (signal.SIGTERM, signal.SIGHUP)
        if signal.getsignal(sig) is not signal.SIG_IGN
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


#: What a full disk, a read-only mount or missing write permission look like.
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_READ_ONLY = (errno.EROFS,)
_DENIED = (errno.EACCES, errno.EPERM)


def storage_error(exc: BaseException, data_dir: Path | str) -> StoreError | None:
    """A clear `StoreError` naming `data_dir` for a full disk, a read-only file system or a
    permission error found anywhere in `exc`'s chain (an `OSError`, SQLite's
    "database or disk is full" / "readonly database", or Chroma's wrapping of them);
    None for anything else, and for a chain that holds a TLS error (a certificate refused
    is an `ssl.SSLError` whose errno is EPERM: it says nothing of the data dir)."""
    import ssl

    seen: set[int] = set()
    current: BaseException | None = exc
    kind = ""
    while current is not None and id(current) not in seen and not kind:
        seen.add(id(current))
        if isinstance(current, ssl.SSLError):
            return None
        text = str(current).lower()
        code = current.errno if isinstance(current, OSError) else None
        if code in _FULL or "disk is full" in text or "no space left" in text:
            kind = "full"
        elif code in _READ_ONLY or "read-only file system" in text or "readonly database" in text:
            kind = "read-only"
        elif code in _DENIED:  # by errno only: SQLite's "unable to open" has other causes
            kind = "denied"
        current = current.__cause__ or current.__context__
    if not kind and isinstance(exc, StoreError) and disk_full(data_dir):
        kind = "full"  # Chroma's own words for it: "Error in compaction: Failed to apply logs"
    if kind == "full":
        return StoreError(
            f"the disk holding the data dir {data_dir} is full; nothing was deleted: free some "
            "space (or point --data-dir / CHROMASYNC_DATA_DIR at a larger disk) and re-run"
        )
    if kind == "read-only":
        return StoreError(
            f"the data dir {data_dir} is on a read-only file system or its files are read-only; "
            "nothing was changed: remount it writable, or copy it to a writable place and "
            "point --data-dir / CHROMASYNC_DATA_DIR there"
        )
    if kind == "denied":
        return StoreError(
            f"permission denied in the data dir {data_dir}; nothing was changed: run as the "
            "user who owns it, or fix its permissions"
        )
    return None


#: Bytes free on a disk below which a failed store write is put down to a full disk.
FULL_BELOW = 1024 * 1024


def disk_full(data_dir: Path | str) -> bool:
    """The file system holding `data_dir` (or its nearest existing parent) has less than
    `FULL_BELOW` bytes free for this user."""
    import os

    path = os.path.abspath(data_dir)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    try:
        found = os.statvfs(path)
    except (OSError, AttributeError):  # no statvfs (Windows)
        return False
    return found.f_bavail * found.f_frsize < FULL_BELOW


@contextmanager
def storage_errors(data_dir: Path | str) -> Iterator[None]:
    """A full disk, a read-only data dir or a permission error as a clear `StoreError`
    naming the data dir (never a raw `OSError` or `sqlite3.OperationalError`)."""
    try:
        yield
    except ChromasyncError as exc:
        found = storage_error(exc, data_dir) if isinstance(exc, StoreError) else None
        if found is None or found is exc:
            raise
        raise found from exc
    except (OSError, sqlite3.Error) as exc:
        found = storage_error(exc, data_dir)
        if found is None:
            raise
        raise found from exc


__all__ = [
    "FULL_BELOW",
    "SURFACES",
    "AccessDenied",
    "AnswerError",
    "ChatRefused",
    "ChatUnreachable",
    "ChromasyncError",
    "ConfigError",
    "EmbeddingError",
    "LockError",
    "NotFound",
    "SourceError",
    "StoreError",
    "disk_full",
    "error_class",
    "error_classes",
    "is_secret_key",
    "lookup",
    "not_installed",
    "shown_url",
    "sigterm_interrupts",
    "storage_error",
    "storage_errors",
    "url_problem",
]
