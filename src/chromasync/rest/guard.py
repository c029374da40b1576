"""Who may call the service, and what a failure answers: the bearer token (`TokenGate`),
cross-site requests (`WriteGuard`: the `Origin`, the JSON content type of writes), and the one
table of error class -> HTTP status (`ERROR_STATUS`)."""

from __future__ import annotations

import hmac
from typing import Any

from fastapi.responses import JSONResponse

from ..errors import SURFACES, ChromasyncError, lookup
from .page import STATIC_FILES

#: Error class -> HTTP status (a column of `errors.SURFACES`; the most specific class wins).
ERROR_STATUS: dict[type[ChromasyncError], int] = {c: row[1] for c, row in SURFACES.items()}
PUBLIC_PATHS = frozenset({"/health", "/", "/docs", "/docs/oauth2-redirect", "/openapi.json"})


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
        token = self.token
        if (
            scope["type"] == "http"
            and token
            and not is_public(scope["path"])
            and await refused_token(scope, receive, send, token)
        ):
            return
        await self.app(scope, receive, send)


async def refused_token(scope: Any, receive: Any, send: Any, token: str) -> bool:
    """Whether an HTTP request lacks `Authorization: Bearer <token>`: then it was
    answered, 401 "unauthorized" (and nothing else)."""
    values = [v for k, v in scope["headers"] if k == b"authorization"]
    if authorized(values[0].decode("latin-1") if len(values) == 1 else None, token):
        return False
    headers = {"WWW-Authenticate": "Bearer"}
    await JSONResponse({"detail": "unauthorized"}, 401, headers=headers)(scope, receive, send)
    return True


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


def origin_allowed(
    origin: str, host: str | None, *, scheme: str | None = None, any_loopback: bool = True
) -> bool:
    """True for the service's own origin (same host and port as `Host`, a loopback name for
    a loopback `Host`; the same `scheme` when given) or, with `any_loopback`, a loopback
    page on any port."""
    named, sep, netloc = origin.strip().partition("://")
    named = named.lower()
    if not sep or named not in ("http", "https") or "/" in netloc:
        return False  # "null" (sandboxed or file pages), other schemes, garbage
    found = _host_port(netloc, named)
    if found is None or (scheme is not None and named != scheme):
        return False
    if found[0] in LOOPBACK_HOSTS and any_loopback:
        return True
    own = _host_port(host, named) if host else None
    if own is not None and {own[0], found[0]} <= LOOPBACK_HOSTS:
        return own[1] == found[1]
    return own is not None and own == found


def from_other_site(headers: Any, sites: tuple[bytes, ...] = (b"cross-site",)) -> bool:
    """A browser says the request comes from another site (`Sec-Fetch-Site` in `sites`):
    a link or an `<img>` sends no `Origin`, but this."""
    return any(k == b"sec-fetch-site" and v.strip().lower() in sites for k, v in headers)


class WriteGuard:
    """ASGI middleware against cross-site requests: foreign `Origin`s are refused on every
    route (as is a request without one that a browser says is cross-site, but for the page
    shell and health), and write methods must declare a JSON body."""

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
            elif not origins and from_other_site(headers) and not is_public(scope["path"]):
                refusal = (403, "cross-site request refused")
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
