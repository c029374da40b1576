"""The REST service and the search page (`chromasync serve`): FastAPI over the owner's `Service`.

The routes, their bodies and answers, the token, the Host and Origin checks and the status
table are documented in docs/rest.md. The modules: `app` (the routes, `ROUTES`, the error
handlers, the middleware), `bodies` (request bodies and search parameters with their bounds),
`guard` (token, Origin, Content-Type; error -> status), `render` (JSON and server-sent
events), `operations` (`POST /index/{operation}`, the owner's wire), `page` (the search page),
`server` (sockets, uvicorn), `connections` (inbound connections within bounds).
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
