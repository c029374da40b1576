"""MCP over stdio (`chromasync mcp`): the SDK's loop, with stdin read here, within bounds.

Lines are read from stdin in pieces and held only up to `MAX_MESSAGE_BYTES`: a longer line
is dropped as it arrives (never held whole) and answered with JSON-RPC error -32600. A line
that is not JSON gets -32700, JSON that is no JSON-RPC message -32600, and so does a request
whose `id` is not a string or an integer (an object, list, bool, float or null: the SDK
would read it as a notification and never answer). Blank lines are skipped. Every error
reply has the id null (the message's id is unknown or unusable).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any, BinaryIO

from ..config.settings import Settings
from .backend import Backend
from .tools import build_server

log = logging.getLogger(__name__)

#: The longest message read from stdin (as `mcp --http` bounds a request's body).
MAX_MESSAGE_BYTES = 1024 * 1024
_READ = 64 * 1024


class TooLong:
    """A line over `MAX_MESSAGE_BYTES`, dropped while it was read: `size` bytes of it."""

    def __init__(self, size: int) -> None:
        self.size = size


async def read_lines(
    stream: BinaryIO, limit: int = MAX_MESSAGE_BYTES
) -> AsyncIterator[bytes | TooLong]:
    """The LF-ended lines of `stream` (read in a worker thread, a piece at a time); a line
    over `limit` bytes is a `TooLong` once it ends, and at most `limit` bytes of it are held."""
    import anyio

    pending = bytearray()
    dropped = 0  # bytes of an over-long line dropped so far (0: not dropping)
    read = getattr(stream, "read1", stream.read)
    while True:
        chunk = await anyio.to_thread.run_sync(read, _READ, abandon_on_cancel=True)
        if not chunk:
            break
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if dropped:
                dropped += len(piece)
            else:
                pending += piece
                if len(pending) > limit:
                    dropped = len(pending)
                    pending.clear()
            if end < 0:
                break
            if dropped:
                yield TooLong(dropped)
            else:
                yield bytes(pending)
            dropped = 0
            pending.clear()
            start = end + 1
    if dropped:
        yield TooLong(dropped)
    elif pending:
        yield bytes(pending)


def _invalid(message: str) -> Any:
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError

    error = ErrorData(code=-32600, message=f"Invalid Request: {message}")
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=error))


def parse_line(line: bytes) -> tuple[Any, Any]:
    """(the `SessionMessage` of one line, None), or (None, the error reply answering it)."""
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter
    from pydantic import ValidationError

    try:
        data = json.loads(line)
    except ValueError as exc:
        return None, error_reply(exc)
    except RecursionError:  # within the line limit, nested past what the decoder recurses
        from mcp_types import ErrorData, JSONRPCError

        error = ErrorData(code=-32700, message="Parse error: the JSON is nested too deeply")
        return None, SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=error))
    if isinstance(data, dict) and "id" in data and "method" in data:
        ident = data["id"]
        if isinstance(ident, bool) or not isinstance(ident, (str, int)):
            kind = "null" if ident is None else type(ident).__name__
            return None, _invalid(f"the id must be a string or an integer, not {kind}")
    try:
        message = jsonrpc_message_adapter.validate_python(data, by_name=False)
    except ValidationError as exc:  # JSON, but not a JSON-RPC message
        return None, error_reply(exc)
    except RecursionError:
        return None, _invalid("the message is nested too deeply")
    return SessionMessage(message), None


def error_reply(exc: Exception) -> Any:
    """The JSON-RPC error answering a line that is not a message: -32700 when it is not
    JSON, -32600 when it is JSON but no JSON-RPC message (the id is unknown: null)."""
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError

    kinds = {e.get("type") for e in getattr(exc, "errors", lambda: [])()}
    if isinstance(exc, ValueError) and not hasattr(exc, "errors"):
        kinds = {"json_invalid"}
    if "json_invalid" in kinds or not kinds:
        error = ErrorData(code=-32700, message="Parse error: the line is not valid JSON")
    else:
        error = ErrorData(code=-32600, message="Invalid Request: not a JSON-RPC 2.0 message")
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=error))


class _NoInput:
    """The SDK's stdin, which it then never reads: `_serve_stdio` reads stdin itself."""

    def __aiter__(self) -> _NoInput:
        return self

    async def __anext__(self) -> str:
        raise StopAsyncIteration


async def _serve_stdio(server: Any, stdin: BinaryIO | None = None) -> None:
    """The SDK's stdio loop (its stdout writer), with stdin read by `read_lines`: a line
    that is not a message gets an error reply on the write stream (the SDK drops some
    silently), messages pass on to the server."""
    release = None
    if stdin is not None:
        source = stdin
    else:
        source, release = _claim_stdin()
    try:
        await _serve_on(server, source)
    finally:
        if release is not None:
            release()


def _claim_stdin() -> tuple[BinaryIO, Callable[[], None] | None]:
    """The wire's stdin, as the SDK claims it (fd 0 then points at the null device, so a
    child process or a handler reads nothing of the wire); the plain buffer where the
    SDK's claim is not available."""
    try:
        from mcp.server.stdio import _claim_fd, _open_stdin_diversion
    except ImportError:
        return sys.stdin.buffer, None
    stream, release = _claim_fd(0, sys.stdin, "rb", _open_stdin_diversion)
    return stream, release


async def _serve_on(server: Any, source: BinaryIO) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    async with stdio_server(stdin=_NoInput()) as (_, write_stream):  # type: ignore[arg-type]
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def pump() -> None:
            async with send:
                async for line in read_lines(source):
                    if isinstance(line, TooLong):
                        log.debug("mcp: a line of %d bytes dropped", line.size)
                        await write_stream.send(
                            _invalid(f"the message is over {MAX_MESSAGE_BYTES} bytes")
                        )
                        continue
                    if not line.strip():
                        continue
                    message, reply = parse_line(line)
                    if reply is not None:
                        await write_stream.send(reply)
                    else:
                        await send.send(message)

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
