"""The ASGI app (`create_app`): the routes over an open `Service` (`ROUTES`), the error
handlers and the middleware; each route takes its input through `bodies`, calls one
operation of the `Service` and answers through `render`."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Annotated, Any

from fastapi import Body, Depends, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.middleware.trustedhost import TrustedHostMiddleware

from .. import __version__, api
from ..config.labels import LABEL_MAX
from ..corpus.paths import resolve_in_roots
from ..errors import ChromasyncError, ConfigError, NotFound
from ..owner import queries as q
from ..owner.queries import CompareQuery, LinksQuery, RemoveRequest, SummariesQuery
from ..owner.service import Service
from ..owner.wire import to_wire
from ..versions import MAX_TARGET_CHARS
from .bodies import AskBody, Label, ReindexBody, SearchBody, SourceBody, search_query
from .connections import BodyLimit
from .guard import TokenGate, WriteGuard, status_for
from .operations import run_operation
from .page import add_page_routes
from .render import answer_stream, hit_json, result_json, sources_json, status_json

log = logging.getLogger("chromasync.rest")  # the package's logger, as before the split


def _service(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


#: The open `Service` a route runs on (`app.state.service`).
Svc = Annotated[Service, Depends(_service)]
#: A search option's repeatable `collection` parameter.
Collections = Annotated[list[str], Query(description="Only these collections.")]
#: A path as hits cite it.
CitedPath = Annotated[str, Query(max_length=8192, description="Path as hits cite it.")]
GroupBy = Annotated[
    str, Query(min_length=1, max_length=200, description="Field, source or path:N.")
]
SourceLabel = Annotated[Label, Query(max_length=LABEL_MAX)]


def health() -> dict[str, str]:
    """Liveness (public, even with a token)."""
    return {"status": "ok", "version": __version__}


def status(service: Svc) -> dict[str, Any]:
    """Sources, files, chunks and last run of the index; the owning process; jobs."""
    return status_json(service.status())


def search(service: Svc, args: Annotated[api.SearchArgs, Depends(search_query)]) -> dict[str, Any]:
    """Search the index (the CLI's parameters); every hit cites path, heading, lines."""
    return result_json(service.search(args))


def search_body(service: Svc, body: SearchBody) -> dict[str, Any]:
    """`/search` with the request as a JSON body (every option under its JSON name, lists
    as lists). Also answers `filter_record`, the filters as parsed."""
    result = service.search(body.search_args())
    return result_json(result) | {"filter_record": result.filters.as_record()}


def ask(service: Svc, body: AskBody, request: Request) -> Any:
    """Answer a question from the index (the search parameters filter the sources);
    every `[n]` in the answer is one of its citations. With `Accept:
    text/event-stream`, the answer streams as in `/ask/stream`."""
    if "text/event-stream" in request.headers.get("accept", ""):
        return ask_stream(service, body)
    return service.ask(body.search_args(), fallback=_fallback(body)).as_json()


def ask_stream(service: Svc, body: AskBody) -> StreamingResponse:
    """`/ask` as server-sent events: `token` ({"text"}) as the model writes, then
    `answer` (the JSON of `/ask`); a failure while answering is an `error` event."""
    return answer_stream(service, body.search_args(), _fallback(body))


def reindex(service: Svc, body: ReindexBody) -> JSONResponse:
    """Queue a delta ingest of one source, several, or all (`{}`); returns the job to
    poll. The body is a JSON object, even when empty."""
    labels = ([body.source] if body.source else []) + body.sources
    job = service.reindex(labels, checksum=body.checksum, allow_mass_delete=body.allow_mass_delete)
    return JSONResponse(job.as_json(), 202, headers={"Location": f"/jobs/{job.id}"})


def jobs(service: Svc) -> list[dict[str, Any]]:
    """Recent jobs, newest first."""
    return service.jobs.list() if service.jobs else []


def job(service: Svc, job_id: str) -> dict[str, Any]:
    """One job: status, progress (phase, done, total), summaries or error."""
    if service.jobs is None:
        raise NotFound(f"no job {job_id!r}")
    return service.jobs.get(job_id)


def sources(service: Svc) -> list[dict[str, Any]]:
    """The sources registry: configured and indexed sources with their figures."""
    return sources_json(service.sources())


def add_source(service: Svc, body: SourceBody) -> JSONResponse:
    """Add a source (its folder must be inside an allowed root) and index it."""
    root = resolve_in_roots(body.path, service.allow_roots, kind="dir")
    payload = service.add_source(root, body.label, body.kind)
    return JSONResponse(payload, 202, headers={"Location": f"/jobs/{payload['job']['id']}"})


def remove_source(
    service: Svc,
    label: Annotated[Label, Path(max_length=LABEL_MAX)],
    keep_declaration: Annotated[
        bool, Query(description="Keep the source declared in the config file.")
    ] = False,
) -> dict[str, Any]:
    """Delete that source's records and manifest (other sources are untouched)."""
    return to_wire(service.remove_source(RemoveRequest(label, keep_declaration)))


def document(service: Svc, path: CitedPath, source: SourceLabel | None = None) -> dict[str, Any]:
    """The indexed chunks of one file, in line order."""
    chunks = service.get_document(path, source)
    return {"path": chunks[0].path, "chunks": [hit_json(h) for h in chunks]}


def file(
    service: Svc, source: SourceLabel, path: Annotated[str, Query(max_length=8192)]
) -> dict[str, Any]:
    """The current text of an indexed file (only indexed files, inside their root)."""
    return to_wire(api.read_indexed_file(service.settings, source, path))


def get_lines(
    service: Svc,
    path: Annotated[
        str | None, Query(max_length=8192, description="PATH[:START[-END]], as hits cite it.")
    ] = None,
    glob: Annotated[str | None, Query(max_length=8192, description="Instead: a glob.")] = None,
    source: SourceLabel | None = None,
    max_bytes: Annotated[int, Query(ge=1, le=10_000_000)] = api.DEFAULT_MAX_BYTES,
) -> dict[str, Any]:
    """Indexed files' current lines (`chromasync get`): one range, or every glob match."""
    if (path is None) == (glob is None):
        raise ConfigError("give path or glob, not both")
    if path is not None:
        return {"files": [to_wire(service.get(path, source))], "left_out": 0}
    return service.multi_get(str(glob), max_bytes, source).as_json()


def links(
    service: Svc,
    target: Annotated[
        str | None,
        Query(max_length=MAX_TARGET_CHARS, description="URL (or under it), path, title."),
    ] = None,
    from_: Annotated[
        str | None,
        Query(alias="from", max_length=8192, description="Instead: this file's links."),
    ] = None,
    source: SourceLabel | None = None,
    collection: Collections = [],  # noqa: B006
    limit: Annotated[int, Query(ge=1, le=q.MAX_LINKS_LIMIT)] = q.LINKS_LIMIT,
) -> dict[str, Any]:
    """Reverse links: the indexed chunks linking to `target` (line, link text); or,
    with `from`, the links of one indexed file (path as hits cite it) and the broken ones."""
    if from_ is not None and "\x00" in from_:
        raise ConfigError("from: not a path")
    from_path = None if from_ is None else _indexed_path(from_)
    query = LinksQuery(target, from_path, source, tuple(collection), limit=limit)
    return service.links(query).as_json()


def suggest(
    service: Svc,
    source: SourceLabel,
    path: CitedPath,
    group_by: GroupBy,
    k: Annotated[int, Query(ge=1, le=50)] = 3,
    collection: Collections = [],  # noqa: B006
) -> dict[str, Any]:
    """Triage: the groups (a metadata field, `source`, `collection` or folder level
    `path:N`) nearest to an indexed file (its own chunks left out), each with a score, a
    confidence band and its two best chunks, and the file's near-duplicates."""
    query = CompareQuery(
        _indexed_path(path), source=source, group_by=group_by, k=k, collections=tuple(collection)
    )
    return service.suggest(query).as_json()


def summaries(
    service: Svc,
    group_by: GroupBy,
    limit: Annotated[int, Query(ge=1, le=q.MAX_SUMMARIES_LIMIT)] = q.SUMMARIES_LIMIT,
    collection: Collections = [],  # noqa: B006
) -> dict[str, Any]:
    """One short summary per group (by the chat model when configured, else
    extractive), with each group's distinctive terms; cached by the group's chunks."""
    return service.summaries(SummariesQuery(group_by, limit, tuple(collection))).as_json()


def index_operation(
    service: Svc,
    operation: Annotated[str, Path(max_length=32)],
    body: Annotated[dict[str, Any], Body()],
) -> Any:
    """The index seam's operations (`owner.index.Index`): the body is the operation's
    call as JSON (`owner.wire`), the answer its result record. What the owner's client
    sends; the other routes answer the same records in their own shapes."""
    return run_operation(service, operation, body)


#: (method, path, handler, tag, status): every route but the page's, over the `Service`.
ROUTES: tuple[tuple[str, str, Callable[..., Any], str, int], ...] = (
    ("GET", "/health", health, "service", 200),
    ("GET", "/status", status, "service", 200),
    ("GET", "/search", search, "search", 200),
    ("POST", "/search", search_body, "search", 200),
    ("POST", "/ask", ask, "search", 200),
    ("POST", "/ask/stream", ask_stream, "search", 200),
    ("POST", "/reindex", reindex, "sync", 202),
    ("GET", "/jobs", jobs, "sync", 200),
    ("GET", "/jobs/{job_id}", job, "sync", 200),
    ("GET", "/sources", sources, "sources", 200),
    ("POST", "/sources", add_source, "sources", 202),
    ("DELETE", "/sources/{label:path}", remove_source, "sources", 200),
    ("GET", "/documents", document, "search", 200),
    ("GET", "/file", file, "search", 200),
    ("GET", "/get", get_lines, "search", 200),
    ("GET", "/links", links, "search", 200),
    ("GET", "/suggest", suggest, "search", 200),
    ("GET", "/summaries", summaries, "search", 200),
    ("POST", "/index/{operation}", index_operation, "search", 200),
)


async def _chromasync_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ChromasyncError)
    status = status_for(exc)
    if status >= 500:
        log.warning("%s %s failed: %s", request.method, request.url.path, exc)
    return JSONResponse({"error": type(exc).__name__, "detail": str(exc)}, status)


async def _bad_request(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = [
        {"where": ".".join(str(p) for p in e.get("loc", ())), "problem": e.get("msg", "")}
        for e in exc.errors()
    ]
    return JSONResponse({"error": "BadRequest", "detail": problems}, 422)


async def _internal(request: Request, exc: Exception) -> JSONResponse:
    log.exception("%s %s: internal error", request.method, request.url.path)
    body = {"error": "InternalError", "detail": "internal error; see the service's log"}
    return JSONResponse(body, 500)


def create_app(
    service: Service,
    *,
    token: str | None = None,
    allowed_hosts: Sequence[str] | None = ("127.0.0.1", "localhost", "::1", "[::1]"),
) -> FastAPI:
    """The ASGI app over an open `Service` (`ROUTES`, the page, the error handlers, the
    middleware). `allowed_hosts=None` accepts any Host header."""
    app = FastAPI(
        title="chromasync",
        version=__version__,
        description="Search and keep in sync a corpus of text files indexed in ChromaDB.",
    )
    app.state.service = service
    app.add_exception_handler(ChromasyncError, _chromasync_error)
    app.add_exception_handler(RequestValidationError, _bad_request)
    app.add_exception_handler(Exception, _internal)
    for method, path, handler, tag, code in ROUTES:
        app.add_api_route(path, handler, methods=[method], tags=[tag], status_code=code)
    add_page_routes(app)
    app.add_middleware(BodyLimit)
    app.add_middleware(WriteGuard)
    app.add_middleware(TokenGate, token=token or None)
    if allowed_hosts is not None:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))
    return app


def _indexed_path(path: str) -> str:
    """A path as hits cite it (relative to its source root): absolute or climbing refused."""
    if path.startswith(("/", "~")) or ".." in path.split("/") or "\\" in path:
        raise ConfigError(f"from: {path!r} must be a path relative to its source root")
    return path


def _fallback(body: AskBody) -> bool | None:
    return None if body.fallback is None else body.fallback == "extractive"
