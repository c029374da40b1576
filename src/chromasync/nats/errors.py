"""The NATS surface's error table: a chromasync error -> the `kind` of an error reply.

The reply's shape and every kind: docs/nats.md, Errors.
"""

from __future__ import annotations

from typing import Any

from ..errors import SURFACES, ChromasyncError, lookup

#: Error class -> the kind of error reply (a column of `errors.SURFACES`).
ERROR_KINDS: dict[type[ChromasyncError], str] = {c: row[3] for c, row in SURFACES.items()}


class BadMessage(Exception):
    """A message this surface refuses: its `kind` and a message that names the fix."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def error_reply(kind: str, message: str) -> dict[str, Any]:
    return {"error": {"kind": kind, "message": message}}


def reply_for(exc: BaseException) -> dict[str, Any]:
    """The error reply of a refused message or a chromasync error; anything else is a bug
    (`internal`, its text left out: it may hold what the sender must not see)."""
    if isinstance(exc, BadMessage):
        return error_reply(exc.kind, exc.message)
    if isinstance(exc, ChromasyncError):
        return error_reply(lookup(ERROR_KINDS, exc), str(exc))
    return error_reply("internal", "internal error; see the service's log")


__all__ = ["ERROR_KINDS", "BadMessage", "error_reply", "reply_for"]
