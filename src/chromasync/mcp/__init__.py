"""`chromasync mcp`: the index as Model Context Protocol tools (official SDK), over stdio or,
with `--http`, over streamable HTTP (one endpoint, `/mcp`, default 127.0.0.1:8766).

Tools: `search` (query plus filters -> cited hits), `ask` (question plus the same filters
-> an answer whose `[n]` markers cite the hits), `list_sources`, `get_document` (a file's
indexed chunks by path), `get` and `multi_get` (files' current lines, as `chromasync get`),
`reindex` (one source, waits for the summary).

Ownership (see `owner`): if another process (`serve`, `watch`, another `mcp`) owns the data
dir, every tool goes through it. Otherwise this process becomes the owner at its first tool
call: it holds the data dir's lock until it exits and serves the REST API on the owner socket,
so that the CLI and other MCP servers can reach the index meanwhile. Errors come back as tool
errors (`is_error`), their text prefixed by the error class (one table: `ERROR_KINDS`).

HTTP mode serves the same tools (`build_server`) with the same ownership (`Backend`). In front
of the SDK's session manager: a Host check (the bound host and the loopback names), an Origin
check (a request with an `Origin` that is neither a loopback page nor allowed by
`--allow-origin` is refused with 403: DNS rebinding), the API token (`CHROMASYNC_API_TOKEN`:
every request needs `Authorization: Bearer <token>`, else 401) and a body limit (1 MiB, 413).

Modules: `tools` (the tools: arguments checked by pydantic, handlers calling the index),
`backend` (`Backend`: through the owner or as the owner), `errors` (`ERROR_KINDS`), `stdio` and
`http` (the transports and their `run_*`).
"""

from __future__ import annotations

from .backend import Backend
from .errors import ERROR_KINDS
from .http import (
    DEFAULT_HTTP_HOST,
    DEFAULT_HTTP_PORT,
    MAX_HTTP_BODY,
    HTTPGuard,
    http_app,
    http_origin_allowed,
    run_http,
)
from .stdio import run_stdio
from .tools import build_server

__all__ = [
    "DEFAULT_HTTP_HOST",
    "DEFAULT_HTTP_PORT",
    "ERROR_KINDS",
    "MAX_HTTP_BODY",
    "Backend",
    "HTTPGuard",
    "build_server",
    "http_app",
    "http_origin_allowed",
    "run_http",
    "run_stdio",
]
