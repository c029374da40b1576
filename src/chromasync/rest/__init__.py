"""The REST service and the search page (`chromasync serve`): FastAPI over the owner's `Service`.

Design notes: docs/internals.md, `rest/__init__.py`.
"""

from __future__ import annotations

from .app import create_app
from .bodies import add_run_route, search_query
from .connections import server_config
from .guard import ERROR_STATUS, PUBLIC_PATHS, authorized, is_public, origin_allowed, status_for
from .server import (
    BackgroundServer,
    StopSignals,
    bind_tcp,
    bind_unix,
    make_server,
    run_server,
)

__all__ = [
    "ERROR_STATUS",
    "PUBLIC_PATHS",
    "BackgroundServer",
    "StopSignals",
    "add_run_route",
    "authorized",
    "bind_tcp",
    "bind_unix",
    "create_app",
    "is_public",
    "make_server",
    "origin_allowed",
    "run_server",
    "search_query",
    "server_config",
    "status_for",
]
