"""The REST service and the search page (`chromasync serve`): FastAPI over `api` and `Service`.

Routes (OpenAPI at `/docs` and `/openapi.json`):

    GET    /health             liveness; public
    GET    /status             sources, files, chunks, last run, the owner, jobs
    GET    /search             the CLI's parameters (q, k, mode, source, tag, after, ...)
    POST   /search             {"query", every option by its JSON name}: the owner's wire
    POST   /ask                {"question", search parameters...} -> the answer with citations
    POST   /ask/stream         the same as server-sent events: `token`..., then `answer`
                               (or `error`); also POST /ask with Accept: text/event-stream
    POST   /reindex            {"source": L} or {"sources": [..]} or {} (all) -> 202 + job
    GET    /jobs, /jobs/{id}   progress and summaries of reindex jobs
    GET    /sources            known sources with their figures
    POST   /sources            {"path", "label", "kind"}: add a source (path in an allowed root)
    DELETE /sources/{label}    remove that source's records and manifest
    GET    /documents          path, source -> the file's indexed chunks
    GET    /file               source, path -> the text of an indexed file (the page's viewer)
    GET    /get                path=PATH[:START[-END]] or glob=G (max_bytes) -> {files, left_out}
    GET    /links              target -> chunks linking to it; from=path -> a file's links
    GET    /suggest            source, path, group_by -> the 3 nearest groups, near-duplicates
    GET    /summaries          group_by -> one cached summary per group (model or extractive)
    POST   /index/{operation}  the index seam's operations, records in and out (`operations`)
    GET    /                   the search page (with /static/app.js, /static/app.css)

Authentication: with a token configured (`CHROMASYNC_API_TOKEN`), every route except the
public ones (`/health`, and the page shell `/`, `/static/*`, `/docs`, `/openapi.json`, which
hold no index data) requires `Authorization: Bearer <token>`; the scheme is case-insensitive,
the comparison constant-time, a token in the query string is ignored, and a 401 says only
"unauthorized". Requests whose Host is not the service's own are refused (DNS rebinding).

Cross-site requests (`WriteGuard`): a request with an `Origin` header is refused (403) unless
that origin is the service itself (same scheme-less host and port as `Host`) or a loopback
page (127.0.0.1, localhost, ::1); every POST must be `Content-Type: application/json` (415)
with a JSON object body (422 for a missing body or `null`), so that no HTML form or
`no-cors` fetch from another site can start a reindex or add a source.

Errors map to statuses in one table, `ERROR_STATUS`; bad input is always a 4xx.

The package's modules: `app` (`create_app`: the routes, the error handlers, the middleware),
`bodies` (request bodies and the search parameters, each with its bounds: the trust boundary),
`guard` (the token, the Origin and Content-Type checks, the error -> status table), `render`
(hits and results as JSON, answers as server-sent events), `page` (the search page and its
static files), `server` (listening sockets, uvicorn), `connections` (a header deadline and
a limit per client for every inbound connection).
"""

from __future__ import annotations

from ..errors import sigterm_interrupts
from .app import create_app
from .bodies import add_run_route, search_query
from .connections import server_config
from .guard import ERROR_STATUS, PUBLIC_PATHS, authorized, is_public, origin_allowed, status_for
from .server import (
    BackgroundServer,
    bind_tcp,
    bind_unix,
    make_server,
    run_server,
)

__all__ = [
    "ERROR_STATUS",
    "PUBLIC_PATHS",
    "BackgroundServer",
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
    "sigterm_interrupts",
    "status_for",
]
