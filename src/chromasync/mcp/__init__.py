"""`chromasync mcp`: the index as Model Context Protocol tools (official SDK), over stdio or,
with `--http`, over streamable HTTP (one endpoint, `/mcp`, default 127.0.0.1:8766).

Tools: `search`, `ask`, `list_sources`, `get_document`, `get`, `multi_get`, `links`,
`suggest`, `summaries`, `reindex`. Every tool goes through the data dir's owner when another
process owns it; else this process becomes the owner at its first tool call and serves the
owner's socket meanwhile (`Backend`; README, "One owner per store"). Errors are tool errors
prefixed by the error class (`ERROR_KINDS`). HTTP mode's Host, Origin, token and body checks:
docs/operators.md, "MCP over HTTP".

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
