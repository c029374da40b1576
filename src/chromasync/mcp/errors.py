"""The MCP surface's error table: a chromasync error -> the kind of tool error an agent sees."""

from __future__ import annotations

from ..errors import (
    AccessDenied,
    AnswerError,
    ChatRefused,
    ChatUnreachable,
    ChromasyncError,
    ConfigError,
    EmbeddingError,
    LockError,
    NotFound,
    SourceError,
    StoreError,
    lookup,
)

#: Error class -> the kind of tool error an agent sees (the most specific class wins).
ERROR_KINDS: dict[type[ChromasyncError], str] = {
    AnswerError: "failed",
    ChatRefused: "permission-denied",
    ChatUnreachable: "unavailable",
    ChromasyncError: "failed",
    ConfigError: "invalid-argument",
    SourceError: "invalid-argument",
    AccessDenied: "permission-denied",
    EmbeddingError: "failed-precondition",
    StoreError: "unavailable",
    LockError: "busy",
    NotFound: "not-found",
}


def error_text(exc: ChromasyncError) -> str:
    """`NotFound: no source 'x' (not-found)`: the class, the message, the kind."""
    return f"{type(exc).__name__}: {exc} ({lookup(ERROR_KINDS, exc)})"
