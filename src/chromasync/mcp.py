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
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from . import __version__, api
from .config.labels import LABEL_MAX, label_problem
from .config.settings import Settings
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
from .owner.index import owner_client
from .records import Hit

log = logging.getLogger(__name__)


def _valid_label(value: str) -> str:
    problem = label_problem(value)
    if problem is not None:
        raise ValueError(f"source label {problem}")
    return value


#: A source label, by the config file's rule (`config.labels.label_problem`).
Label = Annotated[str, Field(max_length=LABEL_MAX), AfterValidator(_valid_label)]
RUN_TIMEOUT = 3600.0


def _hit(hit: Hit) -> dict[str, Any]:
    data = hit.as_json()
    data["citation"] = hit.citation
    return data


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


def _error_text(exc: ChromasyncError) -> str:
    """`NotFound: no source 'x' (not-found)`: the class, the message, the kind."""
    return f"{type(exc).__name__}: {exc} ({lookup(ERROR_KINDS, exc)})"


class Backend:
    """The index as this MCP server reaches it: through the owner, or as the owner."""

    def __init__(self, settings: Settings, reload: Callable[[], Settings] | None = None) -> None:
        self.settings = settings
        self._reload = reload
        self._lock = threading.Lock()
        self._service: Any = None
        self._server: Any = None

    @contextlib.contextmanager
    def access(self) -> Iterator[Any]:
        """The index (`owner.index.Index`): this process's service when it owns the data
        dir (it becomes the owner at the first call when none runs), else the owner's
        client. Both also take `reindex` and `wait`."""
        client = None
        with self._lock:
            if self._service is None:
                client = owner_client(self.settings)
                if client is None:
                    self._become_owner()
            service = self._service
        if client is None:
            yield service
            return
        with client:
            yield client

    def _become_owner(self) -> None:
        from . import rest
        from .owner.service import Service

        service = Service(self.settings, "mcp", reload=self._reload).open()
        try:
            listener = rest.bind_unix(str(service.socket))
            server = rest.BackgroundServer(
                rest.create_app(service, token=service.settings.api_token), [listener]
            )
            server.start()
        except BaseException:
            service.close()
            raise
        self._service, self._server = service, server

    def close(self) -> None:
        if self._server is not None:
            self._server.stop()
        if self._service is not None:
            self._service.close()


def build_server(backend: Backend) -> Any:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer(
        "chromasync",
        version=__version__,
        log_level="WARNING",
        instructions=(
            "Search a corpus of notes, docs and code indexed by chromasync. Every hit cites "
            "its source, path and line range; use get_document to read a whole file."
        ),
    )

    @contextlib.contextmanager
    def tool_errors() -> Iterator[None]:
        try:
            yield
        except ChromasyncError as exc:
            raise ToolError(_error_text(exc)) from exc

    @server.tool()
    def search(
        query: Annotated[str, Field(min_length=1, max_length=2000, description="The question.")],
        k: Annotated[int, Field(ge=1, le=100, description="Number of hits.")] = 10,
        mode: Annotated[
            Literal["hybrid", "dense", "keyword"], Field(description="Meaning, words, or both.")
        ] = "hybrid",
        sources: Annotated[list[Label] | None, Field(description="Only these sources.")] = None,
        tags: Annotated[list[str] | None, Field(description="Only chunks with these tags.")] = None,
        tags_all: Annotated[bool, Field(description="Require every tag (default any).")] = False,
        after: Annotated[str | None, Field(description="Date on or after, ISO.")] = None,
        before: Annotated[str | None, Field(description="Date before, ISO.")] = None,
        paths: Annotated[list[str] | None, Field(description="Path globs (any).")] = None,
        phrases: Annotated[list[str] | None, Field(description="Exact phrases (all).")] = None,
        where: Annotated[
            list[str] | None, Field(description="Metadata equalities, KEY=VALUE (all).")
        ] = None,
        where_json: Annotated[
            dict[str, Any] | None, Field(description="A Chroma `where` filter on metadata.")
        ] = None,
        matches: Annotated[
            list[str] | None, Field(description="FIELD=SUBSTRING in metadata (all).")
        ] = None,
        date_fields: Annotated[
            list[str] | None, Field(description="Front-matter keys `after`/`before` read.")
        ] = None,
        collections: Annotated[
            list[str] | None, Field(description="Only these collections.")
        ] = None,
        links_to: Annotated[
            list[str] | None,
            Field(description="Only chunks linking to these URLs, paths or note titles (all)."),
        ] = None,
        per_doc: Annotated[bool, Field(description="Best chunk per document.")] = False,
        sort: Annotated[Literal["rank", "date"], Field(description="Order of the top k.")] = "rank",
        min_score: Annotated[
            float | None,
            Field(ge=0, le=1, description="Only hits whose relevance (0-1) is at least this."),
        ] = None,
    ) -> dict[str, Any]:
        """Search the index (the CLI's filters); each hit cites source, path, heading and
        start-end lines."""
        with tool_errors(), backend.access() as index:
            settings = backend.settings
            args = api.SearchArgs.of(
                query,
                mode=mode,
                k=k,
                sources=sources,
                tags=tags,
                tags_all=tags_all,
                after=after,
                before=before,
                paths=paths,
                phrases=phrases,
                where=where,
                where_json=where_json,
                matches=matches,
                date_fields=date_fields,
                links_to=links_to,
                collections=collections,
                per_doc=per_doc,
                sort=sort,
                min_score=min_score,
            )
            request = api.search_request(args, settings)
            result = index.retrieve(request)
            data = result.as_json()
            data["hits"] = [_hit(h) for h in result.hits]
            return data

    @server.tool()
    def ask(
        question: Annotated[
            str, Field(min_length=1, max_length=4000, description="The question to answer.")
        ],
        k: Annotated[int, Field(ge=1, le=100, description="Number of hits.")] = 10,
        mode: Annotated[
            Literal["hybrid", "dense", "keyword"], Field(description="Meaning, words, or both.")
        ] = "hybrid",
        sources: Annotated[list[Label] | None, Field(description="Only these sources.")] = None,
        tags: Annotated[list[str] | None, Field(description="Only chunks with these tags.")] = None,
        tags_all: Annotated[bool, Field(description="Require every tag (default any).")] = False,
        after: Annotated[str | None, Field(description="Date on or after, ISO.")] = None,
        before: Annotated[str | None, Field(description="Date before, ISO.")] = None,
        paths: Annotated[list[str] | None, Field(description="Path globs (any).")] = None,
        phrases: Annotated[list[str] | None, Field(description="Exact phrases (all).")] = None,
        where: Annotated[
            list[str] | None, Field(description="Metadata equalities, KEY=VALUE (all).")
        ] = None,
        where_json: Annotated[
            dict[str, Any] | None, Field(description="A Chroma `where` filter on metadata.")
        ] = None,
        matches: Annotated[
            list[str] | None, Field(description="FIELD=SUBSTRING in metadata (all).")
        ] = None,
        date_fields: Annotated[
            list[str] | None, Field(description="Front-matter keys `after`/`before` read.")
        ] = None,
        collections: Annotated[
            list[str] | None, Field(description="Only these collections.")
        ] = None,
        per_doc: Annotated[bool, Field(description="Best chunk per document.")] = False,
        sort: Annotated[Literal["rank", "date"], Field(description="Order of the top k.")] = "rank",
        min_score: Annotated[
            float | None,
            Field(ge=0, le=1, description="Only hits whose relevance (0-1) is at least this."),
        ] = None,
        group_by: Annotated[
            str | None, Field(max_length=200, description="Organise the answer per value.")
        ] = None,
        fallback: Annotated[
            bool | None,
            Field(description="Answer extractively if the chat model is unreachable."),
        ] = None,
    ) -> dict[str, Any]:
        """Answer a question from the index (the filters of `search`): a few sentences whose
        every claim cites a source `[n]`, listed in `citations` (path, heading, lines)."""
        with tool_errors(), backend.access() as index:
            settings = backend.settings
            args = api.SearchArgs.of(
                question,
                mode=mode,
                k=k,
                sources=sources,
                tags=tags,
                tags_all=tags_all,
                after=after,
                before=before,
                paths=paths,
                phrases=phrases,
                where=where,
                where_json=where_json,
                matches=matches,
                date_fields=date_fields,
                collections=collections,
                per_doc=per_doc,
                sort=sort,
                min_score=min_score,
                group_by=group_by,
            )
            request = api.search_request(args, settings)
            answer: dict[str, Any] = index.ask(request, fallback=fallback)
            return answer

    @server.tool()
    def list_sources() -> dict[str, Any]:
        """The indexed sources: label, root folder, files, chunks, model and last run."""
        with tool_errors(), backend.access() as index:
            return {"sources": index.sources()}

    @server.tool()
    def get_document(
        path: Annotated[str, Field(min_length=1, max_length=4096, description="As hits cite it.")],
        source: Annotated[Label | None, Field(description="The source, if ambiguous.")] = None,
    ) -> dict[str, Any]:
        """A file's indexed chunks, in line order (path relative to its source root)."""
        with tool_errors(), backend.access() as index:
            chunks = index.get_document(path, source)
            return {"path": chunks[0].path, "chunks": [_hit(h) for h in chunks]}

    @server.tool()
    def get(
        path: Annotated[
            str,
            Field(min_length=1, max_length=4096, description="PATH[:START[-END]], as hits cite."),
        ],
        source: Annotated[Label | None, Field(description="The source, if ambiguous.")] = None,
    ) -> dict[str, Any]:
        """An indexed file's current lines START..END (1-based; the whole file without)."""
        with tool_errors(), backend.access() as index:
            return index.get(path, source)

    @server.tool()
    def multi_get(
        glob: Annotated[
            str, Field(min_length=1, max_length=4096, description="e.g. journal/2026-05*.md")
        ],
        max_bytes: Annotated[
            int, Field(ge=1, le=10_000_000, description="Larger files are listed, not read.")
        ] = api.DEFAULT_MAX_BYTES,
        source: Annotated[Label | None, Field(description="Only this source.")] = None,
    ) -> dict[str, Any]:
        """The current text of every indexed file matching a glob: {files, left_out}."""
        with tool_errors(), backend.access() as index:
            return index.multi_get(glob, max_bytes, source)

    @server.tool()
    def links(
        target: Annotated[
            str | None,
            Field(max_length=2000, description="A URL (and what is under it), path or title."),
        ] = None,
        from_path: Annotated[
            str | None,
            Field(max_length=4096, description="Instead: what this indexed file links to."),
        ] = None,
        source: Annotated[Label | None, Field(description="The source of from_path.")] = None,
    ) -> dict[str, Any]:
        """Reverse links: every indexed file and chunk linking to `target`, with line and
        link text; or, with `from_path`, that file's links and its broken internal ones."""
        with tool_errors(), backend.access() as index:
            params = {"target": target, "from": from_path, "source": source}
            result: dict[str, Any] = index.links({k: v for k, v in params.items() if v})
            return result

    @server.tool()
    def suggest(
        path: Annotated[
            str, Field(min_length=1, max_length=4096, description="An indexed file, as cited.")
        ],
        source: Annotated[Label, Field(description="The file's source.")],
        group_by: Annotated[
            str,
            Field(min_length=1, max_length=200, description="A field, `source` or `path:N`."),
        ],
    ) -> dict[str, Any]:
        """Triage: the three groups (a metadata field, `source` or folder level `path:N`)
        whose indexed content is nearest to an indexed file, with scores, confidence bands
        and best chunks, and the file's near-duplicates."""
        with tool_errors(), backend.access() as index:
            result: dict[str, Any] = index.suggest(
                {"path": path, "source": source, "group_by": group_by}
            )
            return result

    @server.tool()
    def summaries(
        group_by: Annotated[
            str,
            Field(min_length=1, max_length=200, description="A field, `source` or `path:N`."),
        ],
        limit: Annotated[int, Field(ge=1, le=1000, description="At most this many groups.")] = 50,
    ) -> dict[str, Any]:
        """One short summary per group (each value of `group_by`), with its distinctive
        terms: what each folder, source or field value of the corpus is about."""
        with tool_errors(), backend.access() as index:
            result: dict[str, Any] = index.summaries({"group_by": group_by, "limit": limit})
            return result

    @server.tool()
    def reindex(
        source: Annotated[Label, Field(description="The source's label.")],
    ) -> dict[str, Any]:
        """Bring one source's index up to date with its files (a delta run); its summary."""
        with tool_errors(), backend.access() as index:
            job = index.wait(index.reindex([source])["id"], timeout=RUN_TIMEOUT)
            if job["status"] == "failed":
                raise ToolError(f"reindex of {source!r} failed: {job['error']}")
            return {"job": job["id"], "status": job["status"], "summaries": job["summaries"]}

    return server


def error_reply(exc: Exception) -> Any:
    """The JSON-RPC error answering a line that is not a message: -32700 when it is not
    JSON, -32600 when it is JSON but no JSON-RPC message (the id is unknown: null)."""
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError

    kinds = {e.get("type") for e in getattr(exc, "errors", lambda: [])()}
    if "json_invalid" in kinds or not kinds:
        error = ErrorData(code=-32700, message="Parse error: the line is not valid JSON")
    else:
        error = ErrorData(code=-32600, message="Invalid Request: not a JSON-RPC 2.0 message")
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=error))


async def _serve_stdio(server: Any) -> None:
    """The SDK's stdio loop, except that a line that is not a message gets an error reply
    (the SDK drops it silently): the transport's exceptions are answered on its own
    write stream, messages pass on to the server."""
    import anyio
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def pump() -> None:
            async with send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        log.debug("mcp: unparseable line: %s", item)
                        await write_stream.send(error_reply(item))
                    else:
                        await send.send(item)

        lowlevel = server._lowlevel_server
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pump)
            await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())
            tasks.cancel_scope.cancel()


def run_stdio(settings: Settings, reload: Callable[[], Settings] | None = None) -> None:
    """Serve MCP over stdin/stdout until the client closes the stream."""
    import anyio

    backend = Backend(settings, reload)
    try:
        anyio.run(_serve_stdio, build_server(backend))
    finally:
        backend.close()


# -- streamable HTTP (`chromasync mcp --http`) -----------------------------------------------

#: The defaults of `chromasync mcp --http` (`serve` listens on 8765).
DEFAULT_HTTP_HOST = "127.0.0.1"
DEFAULT_HTTP_PORT = 8766
#: The MCP endpoint's path (the SDK's convention); every other path is 404.
HTTP_PATH = "/mcp"
#: The largest request body the HTTP transport reads (413 beyond; tool arguments are small).
MAX_HTTP_BODY = 1024 * 1024
#: At most this many MCP sessions at once (503 for one more); an idle one ends after 30 min.
MAX_HTTP_SESSIONS = 100


def _normal_origin(origin: str) -> str:
    return origin.strip().rstrip("/").lower()


def http_origin_allowed(origin: str, allowed: Sequence[str] = ()) -> bool:
    """True for a loopback page's origin (127.0.0.1, localhost, ::1, any port) or one of
    `allowed` (exact `scheme://host[:port]`, case-insensitive)."""
    from .rest import origin_allowed

    if _normal_origin(origin) in {_normal_origin(a) for a in allowed}:
        return True
    return origin_allowed(origin, None)


class HTTPGuard:
    """ASGI middleware in front of the MCP endpoint: a request whose `Origin` is present and
    neither loopback nor allowed is refused (403, the DNS-rebinding defence the MCP spec
    asks for), and with a token every request needs `Authorization: Bearer <token>` (401)."""

    def __init__(self, app: Any, token: str | None, allowed_origins: Sequence[str] = ()) -> None:
        self.app = app
        self.token = token or None
        self.allowed_origins = tuple(allowed_origins)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from starlette.responses import JSONResponse

        from .rest import authorized

        if scope["type"] == "http":
            headers = scope["headers"]
            origins = [v.decode("latin-1") for k, v in headers if k == b"origin"]
            if origins and (
                len(origins) > 1 or not http_origin_allowed(origins[0], self.allowed_origins)
            ):
                body = {"error": "Refused", "detail": "cross-origin request refused"}
                await JSONResponse(body, status_code=403)(scope, receive, send)
                return
            if self.token:
                values = [v.decode("latin-1") for k, v in headers if k == b"authorization"]
                if not authorized(values[0] if len(values) == 1 else None, self.token):
                    response = JSONResponse(
                        {"detail": "unauthorized"},
                        status_code=401,
                        headers={"WWW-Authenticate": "Bearer"},
                    )
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)


def http_app(
    server: Any,
    *,
    token: str | None,
    allowed_hosts: Sequence[str] | None,
    allowed_origins: Sequence[str] = (),
) -> Any:
    """The ASGI app serving `server` (from `build_server`) over streamable HTTP at
    `HTTP_PATH`: Host check (`allowed_hosts`; None accepts any), then `HTTPGuard`, then the
    SDK's session manager (body limit, sessions). Needs the ASGI lifespan run."""
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    inner = server.streamable_http_app(
        streamable_http_path=HTTP_PATH,
        max_request_body_size=MAX_HTTP_BODY,
        max_sessions=MAX_HTTP_SESSIONS,
        # the Host and Origin checks are ours (HTTPGuard, TrustedHostMiddleware)
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    app: Any = HTTPGuard(inner, token, allowed_origins)
    if allowed_hosts is not None:
        app = TrustedHostMiddleware(app, allowed_hosts=list(allowed_hosts))
    return app


def run_http(
    settings: Settings,
    host: str = DEFAULT_HTTP_HOST,
    port: int = DEFAULT_HTTP_PORT,
    *,
    allowed_hosts: Sequence[str] | None,
    allowed_origins: Sequence[str] = (),
    reload: Callable[[], Settings] | None = None,
    on_listen: Callable[[str], None] | None = None,
) -> None:
    """Serve MCP over streamable HTTP on host:port until SIGINT/SIGTERM. The tools reach the
    index as in stdio mode (`Backend`): through the data dir's owner, or as the owner from
    the first tool call on. `on_listen` gets the endpoint's URL once the port is bound."""
    import uvicorn

    from . import rest

    backend = Backend(settings, reload)
    try:
        app = http_app(
            build_server(backend),
            token=settings.api_token,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
        )
        tcp = rest.bind_tcp(host, port)
        shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
        if on_listen is not None:
            on_listen(f"http://{shown}:{tcp.getsockname()[1]}{HTTP_PATH}")
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=5,
        )
        with _sigterm_interrupts():
            rest.run_server(app, [tcp], uvicorn.Server(config))
    finally:
        backend.close()


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt meanwhile. uvicorn re-raises the signal it caught
    once it has shut down; with the default handler the process would die right there,
    before `Backend.close` releases the data dir."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


__all__ = [
    "DEFAULT_HTTP_HOST",
    "DEFAULT_HTTP_PORT",
    "Backend",
    "HTTPGuard",
    "build_server",
    "http_app",
    "http_origin_allowed",
    "run_http",
    "run_stdio",
]
