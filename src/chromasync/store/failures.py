"""How a failed Chroma call becomes chromasync's error: credentials, a server that gave up,
TLS, a refused filter; third-party messages shortened and scrubbed of secrets.
"""

from __future__ import annotations

import ssl
from typing import Any

from ..errors import ConfigError, StoreError
from ..retry import GaveUp, Refused
from .target import StoreConfig


def store_error(config: StoreConfig, what: str, exc: BaseException) -> StoreError:
    """A plain `StoreError` for a failed call: credentials, give-up, TLS, or the cause."""
    where = f"Chroma at {config.describe()}"
    found = _find(exc, (GaveUp, Refused))
    if isinstance(found, Refused) or _status_of(exc) in (401, 403):
        status = found.status if isinstance(found, Refused) else _status_of(exc)
        return StoreError(
            f"{where} refused the credentials (HTTP {status}) for {what}; check the token "
            "(CHROMASYNC_CHROMA_TOKEN or --chroma-token; CHROMA_API_KEY for Chroma Cloud) "
            "and the tenant and database"
        )
    if isinstance(found, GaveUp):
        return StoreError(
            f"{where}: {what} failed: {config.redact(str(found))}; the server is "
            "unreachable or overloaded, re-run when it is back (writes are idempotent)"
        )
    text = _shorten(config.redact(f"{type(exc).__name__}: {exc}"))
    if _find(exc, (ssl.SSLError,)) is not None or "CERTIFICATE_VERIFY_FAILED" in text:
        return StoreError(
            f"{where}: {what} failed: TLS: {text}; certificates are verified (for a "
            "private CA set SSL_CERT_FILE)"
        )
    return StoreError(f"{where}: {what} failed: {text}")


#: A third-party error message is cut to this many characters (Chroma's echo the whole
#: `where` clause, which may be as long as a request allows).
MESSAGE_CHARS = 300


def _shorten(text: str) -> str:
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + " …"


def _refused_filter(exc: Exception) -> ConfigError | None:
    """Chroma's refusal of a `where` or `ids` argument (its own validation, client- or
    server-side) as a usage error: a 4xx, never "retry later"."""
    name = type(exc).__name__
    refusal = isinstance(exc, ValueError | TypeError) or name == "InvalidArgumentError"
    if refusal and "where" in str(exc).lower():
        return ConfigError(f"Chroma refused the search filter: {_shorten(str(exc))}")
    return None


def _ef_name(function: Any) -> str | None:
    if function is None:
        return None
    try:
        return str(function.name())
    except Exception:  # noqa: BLE001 - legacy functions without a name
        return type(function).__name__


def _find(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> BaseException | None:
    seen: BaseException | None = exc
    depth = 0
    while seen is not None and depth < 20:
        if isinstance(seen, kinds):
            return seen
        seen = seen.__cause__ or seen.__context__
        depth += 1
    return None


def _status_of(exc: BaseException) -> int | None:
    code = getattr(exc, "code", None)
    if callable(code):
        try:
            value = code()
        except Exception:  # noqa: BLE001
            return None
        return value if isinstance(value, int) else None
    return None


__all__ = ["MESSAGE_CHARS", "store_error"]
