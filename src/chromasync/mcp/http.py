"""MCP over streamable HTTP (`chromasync mcp --http`): one endpoint behind a Host check, an
Origin check, the API token and a body limit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..config.settings import Settings
from .backend import Backend
from .tools import build_server

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


def http_origin_allowed(
    origin: str, host: str | None, scheme: str = "http", allowed: Sequence[str] = ()
) -> bool:
    """True for the service's own origin only (`scheme`, and the host and port of `Host`; a
    loopback name for a loopback `Host`, on that same port: not a loopback page on another
    port) or one of `allowed` (exact `scheme://host[:port]`, case-insensitive)."""
    from ..rest import origin_allowed

    if _normal_origin(origin) in {_normal_origin(a) for a in allowed}:
        return True
    return origin_allowed(origin, host, scheme=scheme, any_loopback=False)


class HTTPGuard:
    """ASGI middleware in front of the MCP endpoint: a request whose `Origin` is present and
    neither the service's own nor allowed is refused (403, the DNS-rebinding defence the MCP
    spec asks for), and with a token every request needs `Authorization: Bearer <token>` (401)."""

    def __init__(self, app: Any, token: str | None, allowed_origins: Sequence[str] = ()) -> None:
        self.app = app
        self.token = token or None
        self.allowed_origins = tuple(allowed_origins)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from starlette.responses import JSONResponse

        from ..rest.guard import from_other_site, refused_token

        if scope["type"] == "http":
            headers = scope["headers"]
            origins = [v.decode("latin-1") for k, v in headers if k == b"origin"]
            hosts = [v.decode("latin-1") for k, v in headers if k == b"host"]
            host = hosts[0] if len(hosts) == 1 else None
            scheme = str(scope.get("scheme", "http"))
            if (
                origins
                and (
                    len(origins) > 1
                    or not http_origin_allowed(origins[0], host, scheme, self.allowed_origins)
                )
            ) or (not origins and from_other_site(headers, (b"cross-site", b"same-site"))):
                body = {"error": "Refused", "detail": "cross-origin request refused"}
                await JSONResponse(body, status_code=403)(scope, receive, send)
                return
            if self.token and await refused_token(scope, receive, send, self.token):
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
    token: str | None = None,
) -> None:
    """Serve MCP over streamable HTTP on host:port until SIGINT/SIGTERM. The tools reach the
    index as in stdio mode (`Backend`): through the data dir's owner, or as the owner from
    the first tool call on. `on_listen` gets the endpoint's URL once the port is bound.
    `token`: the one every request needs (the CLI passes the data dir's own when no
    CHROMASYNC_API_TOKEN is set); None: `settings.api_token`."""
    from .. import rest

    backend = Backend(settings, reload)
    try:
        app = http_app(
            build_server(backend),
            token=token or settings.api_token,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
        )
        tcp = rest.bind_tcp(host, port)
        shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
        if on_listen is not None:
            on_listen(f"http://{shown}:{tcp.getsockname()[1]}{HTTP_PATH}")
        # SIGTERM leaves through `finally`, at any moment (`rest.StopSignals`)
        with rest.StopSignals() as stop:
            rest.run_server([tcp], stop.server(app, lifespan="on"))
    finally:
        backend.close()
