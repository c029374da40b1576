"""The MCP surface's error table: a chromasync error -> the kind of tool error an agent sees."""

from __future__ import annotations

from ..errors import SURFACES, ChromasyncError, lookup

#: Error class -> the kind of tool error an agent sees (a column of `errors.SURFACES`).
ERROR_KINDS: dict[type[ChromasyncError], str] = {c: row[2] for c, row in SURFACES.items()}


def error_text(exc: ChromasyncError) -> str:
    """`NotFound: no source 'x' (not-found)`: the class, the message, the kind."""
    return f"{type(exc).__name__}: {exc} ({lookup(ERROR_KINDS, exc)})"
