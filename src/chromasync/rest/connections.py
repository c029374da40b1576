"""Inbound connections within bounds (docs/reliability.md, "Inbound connections"): a
deadline for a request's head and body (`HEADER_TIMEOUT_S`), a limit on the connections one
client address may hold while they wait for theirs (`MAX_WAITING_PER_CLIENT`; Unix-socket
peers have no address: only the deadline applies), both added to uvicorn's h11 protocol;
and a cap on request bodies, counted while they are read (`BodyLimit`: 413).

`server_config(app, ...)` is the uvicorn `Config` every chromasync server uses.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

HEADER_TIMEOUT_S = 10.0
#: The largest request body the REST app takes (its bodies are small JSON objects).
MAX_REQUEST_BODY = 8 * 1024 * 1024
MAX_WAITING_PER_CLIENT = 32
#: A waiting connection younger than this is not closed for a newer one (a burst).
_GRACE_S = 1.0


class _Waiting:
    """One server's connections waiting for their request head, by client address, and
    the bounds they wait within."""

    def __init__(self, deadline_s: float, limit: int, clock: Callable[[], float]) -> None:
        self.deadline_s, self.limit, self.clock = deadline_s, limit, clock
        self.by_client: dict[str, dict[Any, float]] = {}

    def add(self, connection: Any, client: str) -> None:
        mine = self.by_client.setdefault(client, {})
        mine[connection] = self.clock()
        if len(mine) > self.limit:
            self.trim(mine)
            if len(mine) > self.limit:  # the rest are young: look again once they are not
                connection.loop.call_later(_GRACE_S, self.trim, mine)

    def remove(self, connection: Any, client: str) -> None:
        mine = self.by_client.get(client)
        if mine is not None:
            mine.pop(connection, None)
            if not mine:
                del self.by_client[client]

    def trim(self, mine: dict[Any, float]) -> None:
        """Close a client's oldest waiting connections past the limit, those that have
        waited `_GRACE_S` or more (a burst's new connections get their head through)."""
        now = self.clock()
        while len(mine) > self.limit:
            oldest, since = next(iter(mine.items()))
            if now - since < _GRACE_S:
                return
            oldest._cs_close()


def guarded_protocol(
    header_timeout_s: float | None = None,
    per_client: int | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> type[Any]:
    """uvicorn's h11 protocol class with the header deadline and the per-client limit (one
    class per server: its clients' waiting connections are counted together). None: the
    module's `HEADER_TIMEOUT_S` and `MAX_WAITING_PER_CLIENT` as they are now."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    waiting = _Waiting(
        HEADER_TIMEOUT_S if header_timeout_s is None else header_timeout_s,
        MAX_WAITING_PER_CLIENT if per_client is None else per_client,
        clock,
    )

    class GuardedH11Protocol(H11Protocol):
        _cs_timer: Any = None
        _cs_key: str | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._cs_key = self.client[0] if self.client else None
            self._cs_wait()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            state = self.conn.their_state
            if state is not h11.IDLE:
                self._cs_unlist()  # its head has come: it no longer counts as waiting
                if state is not h11.SEND_BODY:
                    self._cs_done()  # and its body: the deadline is met

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._cs_wait()

        def connection_lost(self, exc: Exception | None) -> None:
            self._cs_done()
            super().connection_lost(exc)

        def _cs_wait(self) -> None:
            self._cs_done()
            self._cs_timer = self.loop.call_later(waiting.deadline_s, self._cs_deadline)
            if self._cs_key is not None:
                waiting.add(self, self._cs_key)

        def _cs_done(self) -> None:
            if self._cs_timer is not None:
                self._cs_timer.cancel()
                self._cs_timer = None
            self._cs_unlist()

        def _cs_unlist(self) -> None:
            if self._cs_key is not None:
                waiting.remove(self, self._cs_key)

        def _cs_deadline(self) -> None:
            self._cs_timer = None
            if self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
                self._cs_close()

        def _cs_close(self) -> None:
            self._cs_done()
            if not self.transport.is_closing():
                self.transport.close()

    return GuardedH11Protocol


class BodyLimit:
    """ASGI middleware: a request body over `MAX_REQUEST_BODY` is refused with 413 while it
    is read; a body within the limit is passed on whole, then the connection's later
    messages (a disconnect) as they come."""

    def __init__(self, app: Any, limit: int | None = None) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = MAX_REQUEST_BODY if self.limit is None else self.limit
        declared = [v for k, v in scope["headers"] if k == b"content-length"]
        if declared and (not declared[0].isdigit() or int(declared[0]) > limit):
            await _too_large(limit, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                chunks = []
                first: dict[str, Any] = message
                break
            size += len(message.get("body", b""))
            if size > limit:
                await _too_large(limit, send)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                first = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
                break
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return first
            return await receive()

        await self.app(scope, replay, send)


async def _too_large(limit: int, send: Any) -> None:
    import json

    body = json.dumps(
        {"error": "Refused", "detail": f"the request body is over {limit} bytes"}
    ).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def server_config(app: Any, **options: Any) -> Any:
    """A uvicorn `Config` for `app` with the guarded protocol (quiet, no access log)."""
    import uvicorn

    settings: dict[str, Any] = {"log_level": "warning", "access_log": False, "lifespan": "off"}
    settings.update(options)
    return uvicorn.Config(app, http=guarded_protocol(), **settings)


__all__ = [
    "HEADER_TIMEOUT_S",
    "MAX_REQUEST_BODY",
    "MAX_WAITING_PER_CLIENT",
    "BodyLimit",
    "guarded_protocol",
    "server_config",
]
