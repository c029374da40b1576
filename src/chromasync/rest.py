"""The REST service and the search page (`chromasync serve`): FastAPI over `api` and `Service`.

Routes (OpenAPI at `/docs` and `/openapi.json`):

    GET    /health             liveness; public
    GET    /status             sources, files, chunks, last run, the owner, jobs
    GET    /search             the CLI's parameters (q, k, mode, source, tag, after, ...)
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
"""

from __future__ import annotations

import contextlib
import dataclasses
import hmac
import json
import logging
import os
import queue
import socket
import stat
import threading
from collections.abc import Iterator, Sequence
from importlib import resources
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from starlette.middleware.trustedhost import TrustedHostMiddleware

from . import __version__, api
from .config.labels import LABEL_MAX, label_problem
from .corpus.paths import resolve_in_roots
from .errors import (
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
from .owner.service import Service
from .records import Hit
from .retrieve.editor import open_urls

log = logging.getLogger(__name__)

#: Error class -> HTTP status (the most specific class wins).
ERROR_STATUS: dict[type[ChromasyncError], int] = {
    AnswerError: 502,
    ChatRefused: 502,
    ChatUnreachable: 503,
    AccessDenied: 403,
    NotFound: 404,
    SourceError: 400,
    ConfigError: 400,
    LockError: 409,
    EmbeddingError: 409,
    StoreError: 503,
    ChromasyncError: 500,
}
PUBLIC_PATHS = frozenset({"/health", "/", "/docs", "/docs/oauth2-redirect", "/openapi.json"})
STATIC_FILES = {"app.js": "text/javascript", "app.css": "text/css"}


def _valid_label(value: str) -> str:
    problem = label_problem(value)
    if problem is not None:
        raise ValueError(f"source label {problem}")
    return value


#: A source label, by the config file's rule (`config.labels.label_problem`).
Label = Annotated[str, AfterValidator(_valid_label)]
PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)


def status_for(exc: ChromasyncError) -> int:
    return lookup(ERROR_STATUS, exc)


def authorized(header: str | None, token: str) -> bool:
    """True when `header` is `Bearer <token>` (scheme in any case), compared in constant time."""
    if not header:
        return False
    scheme, _, credentials = header.strip().partition(" ")
    credentials = credentials.strip()
    if scheme.lower() != "bearer" or not credentials:
        return False
    return hmac.compare_digest(credentials.encode("utf-8"), token.encode("utf-8"))


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or (
        path.startswith("/static/") and path.removeprefix("/static/") in STATIC_FILES
    )


class TokenGate:
    """ASGI middleware: a bearer token on every non-public route, before routing."""

    def __init__(self, app: Any, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.token and not is_public(scope["path"]):
            values = [v for k, v in scope["headers"] if k == b"authorization"]
            header = values[0].decode("latin-1") if len(values) == 1 else None
            if not authorized(header, self.token):
                response = JSONResponse(
                    {"detail": "unauthorized"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})


def _host_port(netloc: str, scheme: str = "http") -> tuple[str, int | None] | None:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(f"{scheme}://{netloc}")
        port = parts.port
    except ValueError:
        return None
    if parts.hostname is None:
        return None
    default = {"http": 80, "https": 443}.get(scheme)
    return parts.hostname.lower(), port if port is not None else default


def origin_allowed(origin: str, host: str | None) -> bool:
    """True for the service's own origin (same host and port as `Host`) or a loopback page."""
    scheme, sep, netloc = origin.strip().partition("://")
    if not sep or scheme.lower() not in ("http", "https") or "/" in netloc:
        return False  # "null" (sandboxed or file pages), other schemes, garbage
    found = _host_port(netloc, scheme.lower())
    if found is None:
        return False
    if found[0] in LOOPBACK_HOSTS:
        return True
    own = _host_port(host, scheme.lower()) if host else None
    return own is not None and own == found


class WriteGuard:
    """ASGI middleware against cross-site requests: foreign `Origin`s are refused on every
    route, and write methods must declare a JSON body."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = scope["headers"]
            origins = [v.decode("latin-1") for k, v in headers if k == b"origin"]
            hosts = [v.decode("latin-1") for k, v in headers if k == b"host"]
            refusal: tuple[int, str] | None = None
            if origins and (
                len(origins) > 1 or not origin_allowed(origins[0], hosts[0] if hosts else None)
            ):
                refusal = (403, "cross-origin request refused")
            elif scope["method"] in WRITE_METHODS:
                types = [v.decode("latin-1") for k, v in headers if k == b"content-type"]
                media = types[0].split(";")[0].strip().lower() if len(types) == 1 else ""
                if media != "application/json":
                    refusal = (415, "write requests take Content-Type: application/json")
            if refusal is not None:
                body = {"error": "Refused", "detail": refusal[1]}
                await JSONResponse(body, status_code=refusal[0])(scope, receive, send)
                return
        await self.app(scope, receive, send)


# -- request bodies (the trust boundary) -------------------------------------------------------


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReindexBody(_Body):
    source: Label | None = Field(default=None, max_length=LABEL_MAX)
    sources: list[Annotated[Label, Field(max_length=LABEL_MAX)]] = Field(
        default_factory=list, max_length=1000
    )
    checksum: bool = False
    allow_mass_delete: bool = False


class SourceBody(_Body):
    path: str = Field(max_length=8192)
    label: Label | None = Field(default=None, max_length=LABEL_MAX)
    kind: str = Field(default="notes", pattern=r"^[a-z][a-z0-9_-]{0,31}$")


Item = Annotated[str, Field(max_length=2000)]


class AskBody(_Body):
    """`POST /ask`: the question and the parameters of `GET /search` (lists as lists).

    The question's own limit (`answer.ask.MAX_QUESTION_CHARS`) is checked by the answer
    layer, so that an over-long question is a 400 that says so."""

    question: str = Field(max_length=1_000_000)
    k: int = Field(default=10, ge=1, le=1000)
    mode: Literal["hybrid", "dense", "keyword"] = "hybrid"
    sources: list[Item] = Field(default_factory=list, max_length=100)
    where: list[Item] = Field(default_factory=list, max_length=100)
    where_json: str | dict[str, Any] | None = None
    tags: list[Item] = Field(default_factory=list, max_length=100)
    tags_all: bool = False
    after: str | None = Field(default=None, max_length=64)
    before: str | None = Field(default=None, max_length=64)
    date_fields: list[Item] = Field(default_factory=list, max_length=20)
    paths: list[Item] = Field(default_factory=list, max_length=100)
    phrases: list[Item] = Field(default_factory=list, max_length=100)
    matches: list[Item] = Field(default_factory=list, max_length=100)
    collections: list[Item] = Field(default_factory=list, max_length=100)
    all_collections: bool = False
    per_doc: bool = False
    sort: Literal["rank", "date"] = "rank"
    group_by: str | None = Field(default=None, max_length=200)
    rerank: bool = True
    min_score: float | None = Field(default=None, ge=0, le=1)
    fallback: Literal["none", "extractive"] | None = None

    def search_args(self) -> api.SearchArgs:
        fields = self.model_dump(exclude={"question", "fallback"})
        return api.SearchArgs.of(self.question, **fields)


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def answer_events(work: Any) -> Iterator[bytes]:
    """Server-sent events of `work(on_token) -> Answer`, run on a thread: a `token` event
    per piece, then `answer` (the answer's JSON), or `error` ({error, detail, status})."""
    pieces: queue.Queue[tuple[str, Any]] = queue.Queue()

    def run() -> None:
        try:
            found = work(lambda piece: pieces.put(("token", {"text": piece})))
            pieces.put(("answer", found.as_json()))
        except ChromasyncError as exc:
            body = {"error": type(exc).__name__, "detail": str(exc), "status": status_for(exc)}
            pieces.put(("error", body))
        except Exception:
            log.exception("POST /ask/stream: internal error")
            body = {"error": "InternalError", "detail": "internal error; see the service's log"}
            pieces.put(("error", body | {"status": 500}))

    threading.Thread(target=run, daemon=True, name="chromasync-ask").start()
    while True:
        event, data = pieces.get()
        yield _sse(event, data)
        if event != "token":
            return


# -- rendering -----------------------------------------------------------------------------


def hit_json(hit: Hit) -> dict[str, Any]:
    data = hit.as_json()
    data["citation"] = hit.citation
    return data


def result_json(
    result: api.SearchResult, links: Sequence[str | None] | None = None
) -> dict[str, Any]:
    """A search result as `chromasync search --json` prints it; each hit also has its
    `citation` and a `snippet` (text around the first match, with the matched spans), and,
    given `links` (`editor_uri` set), its `open_url` (null where it has none)."""
    hits = []
    for index, hit in enumerate(result.hits):
        item = hit_json(hit)
        if links is not None:
            item["open_url"] = links[index]
        spans = api.highlight(hit.text, result.query, result.filters.phrases)
        text, shifted = api.snippet(hit.text, spans, width=420)
        item["snippet"] = {"text": text, "spans": [list(span) for span in shifted]}
        hits.append(item)
    data = result.as_json()
    data["hits"] = hits
    return data


def _static(name: str) -> str:
    return (resources.files("chromasync") / "static" / name).read_text(encoding="utf-8")


# -- the app -------------------------------------------------------------------------------


def search_query(
    q: Annotated[str, Query(min_length=1, max_length=2000, description="The query.")],
    k: Annotated[int, Query(ge=1, le=1000, description="Number of hits.")] = 10,
    mode: Annotated[
        Literal["hybrid", "dense", "keyword"], Query(description="Meaning, words, or both.")
    ] = "hybrid",
    source: Annotated[list[str], Query(description="Only these sources (any).")] = [],  # noqa: B006
    where: Annotated[list[str], Query(description="KEY=VALUE metadata equality (all).")] = [],  # noqa: B006
    where_json: Annotated[
        str | None, Query(max_length=8192, description="A Chroma where filter (JSON).")
    ] = None,
    tag: Annotated[list[str], Query(description="Front-matter tags.")] = [],  # noqa: B006
    tags_all: Annotated[bool, Query(description="Require every tag (default any).")] = False,
    after: Annotated[str | None, Query(description="Date on or after (ISO).")] = None,
    before: Annotated[str | None, Query(description="Date before (ISO).")] = None,
    date_field: Annotated[list[str], Query(description="Front-matter date keys.")] = [],  # noqa: B006
    path: Annotated[list[str], Query(description="git-wildmatch path patterns (any).")] = [],  # noqa: B006
    phrase: Annotated[list[str], Query(description="Words in this order (all).")] = [],  # noqa: B006
    match: Annotated[list[str], Query(description="FIELD=SUBSTRING in metadata.")] = [],  # noqa: B006
    links_to: Annotated[
        list[str], Query(description="Linking to this URL, path or note title (all).")
    ] = [],  # noqa: B006
    collection: Annotated[list[str], Query(description="Only these collections.")] = [],  # noqa: B006
    all_collections: Annotated[bool, Query(description="Every collection.")] = False,
    per_doc: Annotated[bool, Query(description="Best chunk per document.")] = False,
    sort: Annotated[Literal["rank", "date"], Query(description="Order of the top k.")] = "rank",
    group_by: Annotated[str | None, Query(max_length=200)] = None,
    rerank: Annotated[bool, Query(description="Rerank when a model is set.")] = True,
    min_score: Annotated[
        float | None, Query(ge=0, le=1, description="Only hits of at least this relevance.")
    ] = None,
) -> api.SearchArgs:
    """The search parameters of `/search` (the CLI's), as one request's arguments."""
    return api.SearchArgs.of(
        q,
        mode=mode,
        k=k,
        sources=source,
        where=where,
        where_json=where_json,
        tags=tag,
        tags_all=tags_all,
        after=after,
        before=before,
        date_fields=date_field,
        paths=path,
        phrases=phrase,
        matches=match,
        links_to=links_to,
        collections=collection,
        all_collections=all_collections,
        per_doc=per_doc,
        sort=sort,
        group_by=group_by,
        rerank=rerank,
        min_score=min_score,
    )


def create_app(
    service: Service,
    *,
    token: str | None = None,
    allowed_hosts: Sequence[str] | None = ("127.0.0.1", "localhost", "::1", "[::1]"),
) -> FastAPI:
    """The ASGI app over an open `Service`. `allowed_hosts=None` accepts any Host header."""
    app = FastAPI(
        title="chromasync",
        version=__version__,
        description="Search and keep in sync a corpus of text files indexed in ChromaDB.",
    )
    app.state.service = service

    @app.exception_handler(ChromasyncError)
    async def _chromasync_error(request: Request, exc: ChromasyncError) -> JSONResponse:
        status = status_for(exc)
        if status >= 500:
            log.warning("%s %s failed: %s", request.method, request.url.path, exc)
        return JSONResponse({"error": type(exc).__name__, "detail": str(exc)}, status)

    @app.exception_handler(RequestValidationError)
    async def _bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [
            {"where": ".".join(str(p) for p in e.get("loc", ())), "problem": e.get("msg", "")}
            for e in exc.errors()
        ]
        return JSONResponse({"error": "BadRequest", "detail": problems}, 422)

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s: internal error", request.method, request.url.path)
        body = {"error": "InternalError", "detail": "internal error; see the service's log"}
        return JSONResponse(body, 500)

    @app.get("/health", tags=["service"])
    def health() -> dict[str, str]:
        """Liveness (public, even with a token)."""
        return {"status": "ok", "version": __version__}

    @app.get("/status", tags=["service"])
    def status() -> dict[str, Any]:
        """Sources, files, chunks and last run of the index; the owning process; jobs."""
        return service.status()

    @app.get("/search", tags=["search"])
    def search(args: Annotated[api.SearchArgs, Depends(search_query)]) -> dict[str, Any]:
        """Search the index (the CLI's parameters); every hit cites path, heading, lines."""
        request = api.search_request(args, service.settings)
        result = service.retrieve(request)
        links = open_urls(service.settings, result.hits) if service.settings.editor_uri else None
        return result_json(result, links)

    def _ask(body: AskBody, on_token: Any = None) -> Any:
        return service.answer(body.question, _asked(body), on_token, _fallback(body))

    def _asked(body: AskBody) -> api.SearchResult:
        from .answer.ask import check_question

        check_question(body.question)
        return service.retrieve(api.search_request(body.search_args(), service.settings))

    def _stream(body: AskBody) -> StreamingResponse:
        result = _asked(body)  # bad input and retrieval errors: a plain 4xx/5xx, not a stream

        def work(on_token: Any) -> Any:
            return service.answer(body.question, result, on_token, _fallback(body))

        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(
            answer_events(work), media_type="text/event-stream", headers=headers
        )

    @app.post("/ask", tags=["search"])
    def ask(body: AskBody, request: Request) -> Any:
        """Answer a question from the index (the search parameters filter the sources);
        every `[n]` in the answer is one of its citations. With `Accept:
        text/event-stream`, the answer streams as in `/ask/stream`."""
        if "text/event-stream" in request.headers.get("accept", ""):
            return _stream(body)
        return _ask(body).as_json()

    @app.post("/ask/stream", tags=["search"])
    def ask_stream(body: AskBody) -> StreamingResponse:
        """`/ask` as server-sent events: `token` ({"text"}) as the model writes, then
        `answer` (the JSON of `/ask`); a failure while answering is an `error` event."""
        return _stream(body)

    @app.post("/reindex", status_code=202, tags=["sync"])
    def reindex(body: ReindexBody) -> JSONResponse:
        """Queue a delta ingest of one source, several, or all (`{}`); returns the job to
        poll. The body is a JSON object, even when empty."""
        labels = ([body.source] if body.source else []) + body.sources
        options = api.default_options(
            service.settings, checksum=body.checksum, allow_mass_delete=body.allow_mass_delete
        )
        job = service.reindex(labels, options)
        return JSONResponse(job, 202, headers={"Location": f"/jobs/{job['id']}"})

    @app.get("/jobs", tags=["sync"])
    def jobs() -> list[dict[str, Any]]:
        """Recent jobs, newest first."""
        return service.jobs.list() if service.jobs else []

    @app.get("/jobs/{job_id}", tags=["sync"])
    def job(job_id: str) -> dict[str, Any]:
        """One job: status, progress (phase, done, total), summaries or error."""
        if service.jobs is None:
            raise NotFound(f"no job {job_id!r}")
        return service.jobs.get(job_id)

    @app.get("/sources", tags=["sources"])
    def sources() -> list[dict[str, Any]]:
        """The sources registry: configured and indexed sources with their figures."""
        return service.sources()

    @app.post("/sources", status_code=202, tags=["sources"])
    def add_source(body: SourceBody) -> JSONResponse:
        """Add a source (its folder must be inside an allowed root) and index it."""
        root = resolve_in_roots(body.path, service.allow_roots, kind="dir")
        payload = service.add_source(root, body.label, body.kind)
        location = f"/jobs/{payload['job']['id']}"
        return JSONResponse(payload, 202, headers={"Location": location})

    @app.delete("/sources/{label:path}", tags=["sources"])
    def remove_source(
        label: Annotated[Label, Path(max_length=LABEL_MAX)],
        keep_declaration: Annotated[
            bool, Query(description="Keep the source declared in the config file.")
        ] = False,
    ) -> dict[str, Any]:
        """Delete that source's records and manifest (other sources are untouched)."""
        return service.remove_source(label, keep_declaration)

    @app.get("/documents", tags=["search"])
    def document(
        path: Annotated[str, Query(max_length=8192, description="Path as hits cite it.")],
        source: Annotated[Label | None, Query(max_length=LABEL_MAX)] = None,
    ) -> dict[str, Any]:
        """The indexed chunks of one file, in line order."""
        chunks = api.get_document(service.settings, path, source)
        return {"path": chunks[0].path, "chunks": [hit_json(h) for h in chunks]}

    @app.get("/file", tags=["search"])
    def file(
        source: Annotated[Label, Query(max_length=LABEL_MAX)],
        path: Annotated[str, Query(max_length=8192)],
    ) -> dict[str, Any]:
        """The current text of an indexed file (only indexed files, inside their root)."""
        found = api.read_indexed_file(service.settings, source, path)
        return dataclasses.asdict(found)

    @app.get("/get", tags=["search"])
    def get_lines(
        path: Annotated[
            str | None, Query(max_length=8192, description="PATH[:START[-END]], as hits cite it.")
        ] = None,
        glob: Annotated[str | None, Query(max_length=8192, description="Instead: a glob.")] = None,
        source: Annotated[Label | None, Query(max_length=LABEL_MAX)] = None,
        max_bytes: Annotated[int, Query(ge=1, le=10_000_000)] = api.DEFAULT_MAX_BYTES,
    ) -> dict[str, Any]:
        """Indexed files' current lines (`chromasync get`): one range, or every glob match."""
        if (path is None) == (glob is None):
            raise ConfigError("give path or glob, not both")
        if path is not None:
            return {"files": [service.get(path, source)], "left_out": 0}
        return service.multi_get(str(glob), max_bytes, source)

    @app.get("/links", tags=["search"])
    def links(
        target: Annotated[
            str | None, Query(max_length=2000, description="URL (and under it), path, title.")
        ] = None,
        from_: Annotated[
            str | None,
            Query(alias="from", max_length=8192, description="Instead: this file's links."),
        ] = None,
        source: Annotated[Label | None, Query(max_length=LABEL_MAX)] = None,
        collection: Annotated[list[str], Query(description="Only these collections.")] = [],  # noqa: B006
        limit: Annotated[int, Query(ge=1, le=10000)] = 1000,
    ) -> dict[str, Any]:
        """Reverse links: the indexed chunks linking to `target` (line, link text); or,
        with `from`, the links of one indexed file (path as hits cite it) and the broken ones."""
        if from_ is not None and "\x00" in from_:
            raise ConfigError("from: not a path")
        found = api.links(
            target,
            service.settings,
            from_path=None if from_ is None else _indexed_path(from_),
            source=source,
            collections=collection,
            limit=limit,
            on_disk=False,
        )
        return found.as_json()

    @app.get("/suggest", tags=["search"])
    def suggest(
        source: Annotated[Label, Query(max_length=LABEL_MAX)],
        path: Annotated[str, Query(max_length=8192, description="Path as hits cite it.")],
        group_by: Annotated[
            str, Query(min_length=1, max_length=200, description="Field, source or path:N.")
        ],
        k: Annotated[int, Query(ge=1, le=50)] = 3,
        collection: Annotated[list[str], Query(description="Only these collections.")] = [],  # noqa: B006
    ) -> dict[str, Any]:
        """Triage: the groups (a metadata field, `source`, `collection` or folder level
        `path:N`) nearest to an indexed file (its own chunks left out), each with a score, a
        confidence band and its two best chunks, and the file's near-duplicates."""
        found = api.suggest(
            _indexed_path(path),
            service.settings,
            group_by=group_by,
            k=k,
            collections=collection,
            source=source,
        )
        return found.as_json()

    @app.get("/summaries", tags=["search"])
    def summaries(
        group_by: Annotated[
            str, Query(min_length=1, max_length=200, description="Field, source or path:N.")
        ],
        limit: Annotated[int, Query(ge=1, le=10000)] = 100,
        collection: Annotated[list[str], Query(description="Only these collections.")] = [],  # noqa: B006
    ) -> dict[str, Any]:
        """One short summary per group (by the chat model when configured, else
        extractive), with each group's distinctive terms; cached by the group's chunks."""
        return service.summaries({"group_by": group_by, "limit": limit, "collection": collection})

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> HTMLResponse:
        return HTMLResponse(_static("index.html"), headers=_page_headers())

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in STATIC_FILES:
            raise NotFound(f"no static file {name!r}")
        return Response(_static(name), media_type=STATIC_FILES[name], headers=_page_headers())

    app.add_middleware(WriteGuard)
    app.add_middleware(TokenGate, token=token or None)
    if allowed_hosts is not None:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))
    return app


def bind_tcp(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: any free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host.strip("[]"), port), family=family)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc


def bind_unix(path: str) -> socket.socket:
    """A listening Unix socket at `path` (mode 0600); a stale one is replaced.

    Only the data dir's owner calls this, while holding its lock: a socket left at `path`
    belongs to a dead owner.
    """
    if os.path.lexists(path):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise ConfigError(f"{path} exists and is not a socket; remove it")
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(path)
    os.chmod(path, 0o600)
    sock.listen(128)
    return sock


def run_server(app: Any, listeners: Sequence[socket.socket], server: Any = None) -> None:
    """Serve `app` on the given listening sockets until SIGINT/SIGTERM (uvicorn)."""
    import uvicorn

    if server is None:
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=5
        )
        server = uvicorn.Server(config)
    unix_paths = [str(s.getsockname()) for s in listeners if s.family == socket.AF_UNIX]
    try:
        server.run(sockets=list(listeners))
    finally:
        for sock in listeners:
            sock.close()
        for path in unix_paths:
            with contextlib.suppress(OSError):
                os.unlink(path)


class BackgroundServer:
    """`app` served on listening sockets from a daemon thread (for `chromasync mcp`)."""

    def __init__(self, app: Any, listeners: Sequence[socket.socket]) -> None:
        import uvicorn

        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._listeners = list(listeners)
        self._thread = threading.Thread(
            target=run_server, args=(app, self._listeners, self._server), daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


def _indexed_path(path: str) -> str:
    """A path as hits cite it (relative to its source root): absolute or climbing refused."""
    if path.startswith(("/", "~")) or ".." in path.split("/") or "\\" in path:
        raise ConfigError(f"from: {path!r} must be a path relative to its source root")
    return path


def _fallback(body: AskBody) -> bool | None:
    return None if body.fallback is None else body.fallback == "extractive"


def _page_headers() -> dict[str, str]:
    return {
        "Content-Security-Policy": PAGE_CSP,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-cache",
    }


__all__ = [
    "ERROR_STATUS",
    "BackgroundServer",
    "authorized",
    "bind_tcp",
    "bind_unix",
    "create_app",
    "run_server",
    "search_query",
    "status_for",
]
