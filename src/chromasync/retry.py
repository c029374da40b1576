"""Retrying transient HTTP failures: a pure policy (`retry_delay`), an httpx transport that
applies it (`RetryingTransport`) and one that ends each request at a deadline
(`DeadlineTransport`).

Every outbound HTTP client shares it, so any stage may import it. What is retried, the
backoff, `Retry-After` and the deadlines: docs/reliability.md, "Outbound calls".
"""

from __future__ import annotations

import contextlib
import email.utils
import logging
import random as _random
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

log = logging.getLogger(__name__)

TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})
#: The most bytes of a retried error response read before its connection is closed.
DRAIN_BYTES = 64 * 1024
#: httpx errors that are worth another attempt (the others are configuration mistakes).
_TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard to try: at most `attempts` tries within `deadline_s` seconds of waiting."""

    attempts: int = 6
    base_s: float = 0.5
    cap_s: float = 20.0
    deadline_s: float = 120.0
    max_retry_after_s: float = 60.0


NO_RETRY = RetryPolicy(attempts=1)


@dataclass(frozen=True, slots=True)
class Failure:
    """What went wrong with one attempt: an HTTP status, or a transport error's name."""

    status: int | None = None
    error: str | None = None  # e.g. "ConnectError", "ReadTimeout"
    retry_after_s: float | None = None
    final: bool = False  # an error that no retry can fix (a TLS certificate refused)

    @property
    def transient(self) -> bool:
        if self.final:
            return False
        return self.error is not None or self.status in TRANSIENT_STATUSES

    def describe(self) -> str:
        if self.status is not None:
            return f"HTTP {self.status}"
        return self.error or "unknown error"


def retry_delay(
    policy: RetryPolicy, attempt: int, failure: Failure, waited_s: float, rand: float
) -> float | None:
    """Seconds to wait after failed attempt `attempt` (1-based) before the next, or None.

    `waited_s` is the time already spent waiting in this request's retries; `rand` is a
    uniform random number in [0, 1).
    """
    if not failure.transient or attempt >= policy.attempts:
        return None
    backoff = min(policy.cap_s, policy.base_s * 2 ** (attempt - 1))
    delay = float(backoff / 2 + backoff / 2 * rand)
    if failure.retry_after_s is not None:
        if failure.retry_after_s > policy.max_retry_after_s:
            return None
        delay = max(delay, failure.retry_after_s)
    if waited_s + delay > policy.deadline_s:
        return None
    return delay


def parse_retry_after(value: str | None, now: float) -> float | None:
    """A `Retry-After` header (seconds, or an HTTP date) as seconds from `now`; None if bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


class GaveUp(Exception):
    """Raised by `RetryingTransport` when a transient failure outlasted the policy."""

    def __init__(self, method: str, url: str, attempts: int, waited_s: float, last: Failure):
        self.attempts = attempts
        self.waited_s = waited_s
        self.last = last
        super().__init__(
            f"{method} {url}: gave up after {attempts} attempt(s) and {waited_s:.1f} s of "
            f"waiting; last failure: {last.describe()}"
        )


class Refused(Exception):
    """Raised by `RetryingTransport` for a status in its `refuse` set (401, 403): final."""

    def __init__(self, method: str, url: str, status: int) -> None:
        self.status = status
        super().__init__(f"{method} {url}: HTTP {status}")


def classify_error(exc: BaseException) -> Failure:
    """The `Failure` of a transport error; TLS failures are final, not transient."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            reason = getattr(seen, "reason", None) or seen
            return Failure(error=f"{type(exc).__name__} (TLS: {reason})", final=True)
        seen = seen.__cause__ or seen.__context__
    return Failure(error=type(exc).__name__, final=not isinstance(exc, _TRANSIENT_ERRORS))


def _safe_url(url: httpx.URL) -> str:
    """Scheme, host, port and path only: never credentials or a query string."""
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{url.host}{port}{url.path}"


class RetryingTransport(httpx.BaseTransport):
    """Wraps another transport; retries transient failures as `policy` says."""

    def __init__(
        self,
        inner: httpx.BaseTransport,
        policy: RetryPolicy = RetryPolicy(),
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        random: Callable[[], float] = _random.random,
        refuse: frozenset[int] = frozenset({401, 403}),
        deadline: float | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        total_s: float | None = None,
    ) -> None:
        self.inner = inner
        self.policy = policy
        self.refuse = refuse
        self.deadline = deadline
        self.total_s = total_s
        self._monotonic = monotonic
        self._sleep = sleep
        self._clock = clock
        self._random = random

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()  # the body must be replayable
        waited = 0.0
        attempt = 0
        deadline = self.deadline
        if self.total_s is not None:
            mine = self._monotonic() + self.total_s
            deadline = mine if deadline is None else min(deadline, mine)
        while True:
            attempt += 1
            error: Exception | None = None
            if deadline is not None:
                left = deadline - self._monotonic()
                if left <= 0:
                    raise GaveUp(
                        request.method, _safe_url(request.url), attempt - 1, waited,
                        Failure(error="the deadline passed"),
                    )  # fmt: skip
                _cut_timeouts(request, left)
            try:
                response = self.inner.handle_request(request)
            except _TRANSIENT_ERRORS as exc:
                error = exc
                failure = classify_error(exc)
                if failure.final:
                    raise
            else:
                if response.status_code in self.refuse:
                    response.close()
                    raise Refused(request.method, _safe_url(request.url), response.status_code)
                if response.status_code not in TRANSIENT_STATUSES:
                    return response
                failure = Failure(
                    status=response.status_code,
                    retry_after_s=parse_retry_after(
                        response.headers.get("Retry-After"), self._clock()
                    ),
                )
                _drain(response)
            delay = retry_delay(self.policy, attempt, failure, waited, self._random())
            if delay is not None and deadline is not None and self._monotonic() + delay >= deadline:
                delay = None
            if delay is None:
                url = _safe_url(request.url)
                raise GaveUp(request.method, url, attempt, waited, failure) from error
            log.warning(
                "%s %s failed (%s); retry %d of %d in %.1f s",
                request.method,
                _safe_url(request.url),
                failure.describe(),
                attempt,
                self.policy.attempts - 1,
                delay,
            )
            self._sleep(delay)
            waited += delay

    def close(self) -> None:
        self.inner.close()


def read_capped(chunks: Iterable[bytes], cap: int) -> bytes | None:
    """The bytes of `chunks`, or None as soon as more than `cap` of them were read."""
    body = bytearray()
    for chunk in chunks:
        body += chunk
        if len(body) > cap:
            return None
    return bytes(body)


class Deadline:
    """One call's total deadline, whatever the call waits on: connecting, the answer's
    head or its body. Started with the call (`with`), it learns the call's connection as it
    opens (httpcore's `trace` extension, `extensions`) or from the answer (`watch`); when
    `seconds` pass, that connection is shut down, so a read blocked on a server that holds
    it, or drips a byte now and then, returns at once (`expired` then says why)."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.expired = False
        self._clock = clock
        self._at = clock() + seconds
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True

    def left(self) -> float:
        return max(0.0, self._at - self._clock())

    @property
    def extensions(self) -> dict[str, object]:
        """What a request carries so that its connection is known as soon as it opens."""
        return {"trace": self._trace}

    def _trace(self, name: str, info: dict[str, object]) -> None:
        if name.startswith("connection.connect_") and name.endswith(".complete"):
            self._add(info.get("return_value"))

    def watch(self, response: httpx.Response) -> None:
        """Cover `response`'s connection too (one reused from a pool opened no new one)."""
        self._add(response.extensions.get("network_stream"))

    def _add(self, stream: object) -> None:
        get = getattr(stream, "get_extra_info", None)
        found = get("socket") if callable(get) else None
        if not isinstance(found, socket.socket):
            return
        with self._lock:
            if found in self._sockets:
                return
            self._sockets.append(found)
            late = self.expired
        if late:
            _shut(found)

    def _fire(self) -> None:
        with self._lock:
            self.expired = True
            sockets = list(self._sockets)
        for found in sockets:
            _shut(found)

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


def _shut(found: socket.socket) -> None:
    with contextlib.suppress(OSError):
        found.shutdown(socket.SHUT_RDWR)


#: The `Deadline` of the request this thread is making through a `DeadlineTransport`.
_SENDING = threading.local()


class _NoticedStream(httpcore.NetworkStream):
    """A pooled connection's stream that shows its socket to the deadline of whichever
    request writes or reads it: a kept-alive connection, reused, opens nothing that the
    trace extension would see, and its answer's head may never come whole."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def _notice(self) -> None:
        deadline = getattr(_SENDING, "deadline", None)
        if deadline is not None:
            deadline._add(self._inner)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self._notice()
        return self._inner.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._notice()
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        return _NoticedStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _NoticingBackend(httpcore.NetworkBackend):
    """httpcore's network backend, its every stream a `_NoticedStream`."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        return _NoticedStream(self._inner.connect_tcp(*args, **kwargs))

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        return _NoticedStream(self._inner.connect_unix_socket(*args, **kwargs))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _notice_reuse(transport: httpx.BaseTransport) -> None:
    """Give an `httpx.HTTPTransport`'s connection pool the `_NoticingBackend` (httpx takes
    no network backend of its own; its pool, httpcore's, does)."""
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, httpcore.NetworkBackend) and not isinstance(backend, _NoticingBackend):
        pool._network_backend = _NoticingBackend(backend)  # type: ignore[union-attr]


class AnswerTooLarge(httpx.TransportError):
    """An answer over its size cap: final (retrying brings the same answer)."""


class DeadlineTransport(httpx.BaseTransport):
    """Wraps another transport: each request ends within `seconds`, its answer read whole
    (at most `max_bytes`: `AnswerTooLarge` past them) before it is returned. Past the
    deadline, what the request was waiting on raises `httpx.ReadTimeout` (transient: a
    `RetryingTransport` around this one tries again while its own deadline allows)."""

    def __init__(self, inner: httpx.BaseTransport, seconds: float, max_bytes: int) -> None:
        _notice_reuse(inner)
        self.inner = inner
        self.seconds = seconds
        self.max_bytes = max_bytes

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with Deadline(self.seconds) as deadline:
            request.extensions = {**request.extensions, **deadline.extensions}
            _cut_timeouts(request, max(deadline.left(), 0.001))
            response: httpx.Response | None = None
            _SENDING.deadline = deadline
            try:
                response = self.inner.handle_request(request)
                deadline.watch(response)
                stream = response.stream
                if not isinstance(stream, httpx.SyncByteStream):  # pragma: no cover
                    raise TypeError("DeadlineTransport wraps synchronous transports only")
                body = read_capped(stream, self.max_bytes)
                if deadline.expired:  # an answer read until its connection was shut
                    raise httpx.ReadError("shut at the deadline", request=request)
            except httpx.TransportError as exc:
                if deadline.expired and not isinstance(exc, AnswerTooLarge):
                    raise httpx.ReadTimeout(
                        f"no complete answer within {self.seconds:g} s", request=request
                    ) from exc
                raise
            finally:
                _SENDING.deadline = None
                if response is not None:
                    response.close()
        if body is None:
            raise AnswerTooLarge(
                f"{request.method} {_safe_url(request.url)}: the answer is over "
                f"{self.max_bytes} bytes",
                request=request,
            )
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=httpx.ByteStream(body),
            extensions={k: v for k, v in response.extensions.items() if k != "network_stream"},
            request=request,
        )

    def close(self) -> None:
        self.inner.close()


def _cut_timeouts(request: httpx.Request, left: float) -> None:
    """Every timeout of `request` at most `left` seconds (httpx reads them per request)."""
    timeouts = dict(request.extensions.get("timeout") or {})
    for name in ("connect", "read", "write", "pool"):
        value = timeouts.get(name)
        timeouts[name] = left if value is None else min(float(value), left)
    request.extensions["timeout"] = timeouts


def _drain(response: httpx.Response) -> None:
    """Read at most `DRAIN_BYTES` of a response's body, then close it."""
    try:
        seen = 0
        for chunk in response.iter_raw():
            seen += len(chunk)
            if seen >= DRAIN_BYTES:
                break
    except httpx.HTTPError:
        pass
    finally:
        response.close()


__all__ = [
    "DRAIN_BYTES",
    "NO_RETRY",
    "TRANSIENT_STATUSES",
    "AnswerTooLarge",
    "Deadline",
    "DeadlineTransport",
    "Failure",
    "GaveUp",
    "Refused",
    "RetryPolicy",
    "RetryingTransport",
    "classify_error",
    "parse_retry_after",
    "read_capped",
    "retry_delay",
]
